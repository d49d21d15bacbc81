/// A carer linked to a person: the person (a wearer account) names another account,
/// of role `carer`, by its username; the carer then reads and sets the person's care settings
/// (thresholds, rule switches, contacts) and reads their data on their pages, every read and
/// change logged in the person's access log. Downloads (JSON, CSV, GPX) only when the person
/// allowed them (`mayExport`); erasing the person's data never (the person or an admin does).
/// The person ends the link at any time; the carer may step down.
struct CarerLink: Hashable, Sendable {
    /// The wearer account cared for.
    var personID: String
    /// The carer's account.
    var carerID: String
    /// Whether the carer may download the person's data (export JSON/CSV, track GPX).
    var mayExport: Bool
    var grantedMilliseconds: Int64
    /// `person` (the wearer named the carer) or `admin` (an admin did on the person's behalf).
    var grantedBy: String

    var policyCarer: AccessPolicy.Carer { AccessPolicy.Carer(accountID: carerID, mayExport: mayExport) }
}

enum CarerLinkOutcome: Hashable, Sendable {
    case linked
    /// The carer was linked already; the link now has the new `mayExport`.
    case updated
}

/// The person-to-carer links, on both backends (`carer_links`, migration `people-2`).
protocol CarerStore: Sendable {
    /// Links the carer to the person, or updates an existing link's `mayExport`.
    func linkCarer(_ link: CarerLink) async throws -> CarerLinkOutcome
    /// The carers of a person, oldest link first.
    func carerLinks(personID: String) async throws -> [CarerLink]
    /// The people a carer cares for, oldest link first.
    func carerLinks(carerID: String) async throws -> [CarerLink]
    /// Ends a link; false if there was none.
    func unlinkCarer(personID: String, carerID: String) async throws -> Bool
}
