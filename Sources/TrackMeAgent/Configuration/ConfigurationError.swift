/// One problem in a configuration file: where it is and what is wrong.
public struct ConfigurationIssue: Hashable, Sendable, CustomStringConvertible {
    /// 1-based line of the offending key or value, when the YAML parser knows it.
    public var line: Int?
    public var column: Int?
    /// Dotted key path, e.g. `strap.address`; empty for the document itself.
    public var keyPath: String
    public var message: String

    public init(line: Int?, column: Int? = nil, keyPath: String, message: String) {
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    /// `line 7: strap.adress: unknown key (did you mean address?)`
    public var description: String {
        var parts: [String] = []
        if let line { parts.append("line \(line)") }
        if !keyPath.isEmpty { parts.append(keyPath) }
        parts.append(message)
        return parts.joined(separator: ": ")
    }
}

/// A configuration that cannot be used, with every problem found (not just the first).
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The file could not be read.
        case unreadable
        /// The file is not well-formed YAML.
        case syntax
        /// Well-formed YAML with unknown keys, missing keys or bad values.
        case invalid
    }

    public var code: Code
    /// The file concerned, if the configuration came from one.
    public var path: String?
    /// In file order.
    public var issues: [ConfigurationIssue]

    public init(code: Code, path: String?, issues: [ConfigurationIssue]) {
        self.code = code
        self.path = path
        self.issues = issues
    }

    public var description: String {
        let prefix = path.map { "\($0): " } ?? ""
        return issues.map { prefix + $0.description }.joined(separator: "\n")
    }
}
