import Yams

/// Collects configuration issues while the whole file is read, so a user sees all of them.
final class IssueCollector {
    private(set) var issues: [ConfigurationIssue] = []

    func add(_ mark: Mark?, _ keyPath: String, _ message: String) {
        issues.append(ConfigurationIssue(line: mark?.line, column: mark?.column, keyPath: keyPath, message: message))
    }

    var sorted: [ConfigurationIssue] {
        issues.enumerated().sorted { a, b in
            (a.element.line ?? Int.max, a.offset) < (b.element.line ?? Int.max, b.offset)
        }.map(\.element)
    }
}

/// One YAML mapping of the configuration, read key by key.
///
/// Each accessor marks its key as known; `finish(known:)` then reports every other key as
/// unknown, with a suggestion when one of the known keys is a likely misspelling. Bad values
/// are reported at the value's line and return nil, so reading goes on and every issue is
/// collected.
final class YAMLSection {
    let path: String
    let mark: Mark?
    private let issues: IssueCollector
    private var entries: [(key: String, keyMark: Mark?, value: Node)] = []
    private var consumed: Set<String> = []

    /// An empty section: an absent mapping, where every field takes its default.
    init(path: String, issues: IssueCollector) {
        self.path = path
        self.mark = nil
        self.issues = issues
    }

    /// Reads `node` as a mapping; anything else is reported and treated as empty. `keyMark`
    /// (where the section's own key is) is where missing keys are reported.
    init(node: Node?, path: String, issues: IssueCollector, keyMark: Mark? = nil) {
        self.path = path
        self.mark = keyMark ?? node?.mark
        self.issues = issues
        guard let node else { return }
        if case .scalar(let scalar) = node, Self.isNull(scalar) { return }
        guard case .mapping(let mapping) = node else {
            issues.add(node.mark, path, "expected a mapping of keys to values")
            return
        }
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key else {
                issues.add(key.mark, path, "keys must be plain words")
                continue
            }
            entries.append((scalar.string, key.mark, value))
        }
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The raw node of `key`, or nil if absent or null (`key:`, `key: ~`).
    func node(_ key: String) -> Node? {
        consumed.insert(key)
        guard let entry = entries.first(where: { $0.key == key }) else { return nil }
        if case .scalar(let scalar) = entry.value, Self.isNull(scalar) { return nil }
        return entry.value
    }

    /// The keys present, in file order, with their marks (for maps keyed by name).
    var presentKeys: [(key: String, mark: Mark?)] { entries.map { ($0.key, $0.keyMark) } }

    func report(_ node: Node?, _ key: String, _ message: String) {
        issues.add(node?.mark ?? mark, keyPath(key), message)
    }

    func reportMissing(_ key: String) {
        issues.add(mark, keyPath(key), "required key is missing")
    }

    func section(_ key: String) -> YAMLSection {
        let keyMark = entries.first { $0.key == key }?.keyMark
        return YAMLSection(node: node(key), path: keyPath(key), issues: issues, keyMark: keyMark)
    }

    func string(_ key: String) -> String? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let scalar) = node else {
            report(node, key, "expected a single value")
            return nil
        }
        return scalar.string
    }

    func requiredString(_ key: String) -> String? {
        let present = entries.contains { $0.key == key }
        let value = string(key)
        if value == nil, !present { reportMissing(key) }
        if let value, value.isEmpty {
            report(self.node(key), key, "must not be empty")
            return nil
        }
        return value
    }

    func int(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let scalar) = node, let value = Int.construct(from: scalar) else {
            report(node, key, "expected a whole number between \(range.lowerBound) and \(range.upperBound), got \(Self.show(node))")
            return nil
        }
        guard range.contains(value) else {
            report(node, key, "\(value) is out of range (\(range.lowerBound)...\(range.upperBound))")
            return nil
        }
        return value
    }

    func double(_ key: String, in range: ClosedRange<Double>) -> Double? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let scalar) = node, let value = Double.construct(from: scalar), value.isFinite else {
            report(
                node,
                key,
                "expected a number between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)), got \(Self.show(node))"
            )
            return nil
        }
        guard range.contains(value) else {
            report(node, key, "\(Self.format(value)) is out of range (\(Self.format(range.lowerBound))...\(Self.format(range.upperBound)))")
            return nil
        }
        return value
    }

    func bool(_ key: String) -> Bool? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let scalar) = node, let value = Bool.construct(from: scalar) else {
            report(node, key, "expected true or false, got \(Self.show(node))")
            return nil
        }
        return value
    }

    func choice<Value>(_ key: String, _ choices: [(String, Value)]) -> Value? {
        guard let node = node(key) else { return nil }
        let names = choices.map(\.0)
        guard case .scalar(let scalar) = node else {
            report(node, key, "expected one of \(names.joined(separator: ", "))")
            return nil
        }
        if let match = choices.first(where: { $0.0 == scalar.string }) { return match.1 }
        var message = "\(Self.show(node)) is not one of \(names.joined(separator: ", "))"
        if let suggestion = Spelling.suggestion(for: scalar.string, among: names) {
            message += " (did you mean \(suggestion)?)"
        }
        report(node, key, message)
        return nil
    }

    /// A list of strings; a single string is taken as a list of one.
    func stringList(_ key: String) -> [String]? {
        guard let node = node(key) else { return nil }
        switch node {
        case .scalar(let scalar):
            return [scalar.string]
        case .sequence(let sequence):
            var values: [String] = []
            for item in sequence {
                guard case .scalar(let scalar) = item else {
                    report(item, key, "expected a list of strings")
                    return nil
                }
                values.append(scalar.string)
            }
            return values
        case .mapping, .alias:
            report(node, key, "expected a list of strings")
            return nil
        }
    }

    /// Reports every key no accessor asked for; `hints` explain keys that are known elsewhere
    /// but do not belong here.
    func finish(known: [String], hints: [String: String] = [:]) {
        for entry in entries where !consumed.contains(entry.key) {
            var message = "unknown key"
            if let hint = hints[entry.key] {
                message += " (\(hint))"
            } else if let suggestion = Spelling.suggestion(for: entry.key, among: known) {
                message += " (did you mean \(suggestion)?)"
            }
            issues.add(entry.keyMark, keyPath(entry.key), message)
        }
    }

    private static func isNull(_ scalar: Node.Scalar) -> Bool {
        scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func show(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): "\"\(scalar.string)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

/// "Did you mean" suggestions for misspelt keys and values.
enum Spelling {
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let limit = max(1, min(3, best.0.count / 3))
        return best.1 <= limit ? best.0 : nil
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
