public import TrackMeCore

/// Settings of the pages for people: sessions, password hashing, the map, emergency contacts.
public struct ConsoleConfiguration: Sendable {
    /// A session ends this long after sign-in.
    public var sessionLifetime: Duration
    /// Mark the session cookie `Secure` (set when the server is reached over TLS).
    public var secureCookies: Bool
    /// bcrypt cost (log2 rounds): 12 in service; tests use 4, bcrypt's least.
    public var bcryptCost: UInt8
    /// A tile URL template for the map (`https://tile.example/{z}/{x}/{y}.png`); nil draws the
    /// track on a plain grid with a scale (an air-gapped control room).
    public var tileURL: String?
    /// Where Debian's `libjs-leaflet` installs Leaflet; served under `/assets/leaflet/`.
    public var leafletDirectory: String
    /// How often the dispatcher feed sends a `heartbeat` event (and looks for other instances'
    /// events). The console says "not connected" when two of them are missed, so this bounds how
    /// long a silently dead connection can pass for live.
    public var feedHeartbeat: Duration = .seconds(5)
    /// An executable run once per contact to tell (an SMS gateway's CLI, a mailer). Its
    /// environment holds only `PATH`, `LANG` and `TRACKME_CONTACT_NAME`, `TRACKME_CONTACT_PHONE`,
    /// `TRACKME_CONTACT_EMAIL`, `TRACKME_PERSON`, `TRACKME_ALERT_ID`, `TRACKME_ALERT_KIND`,
    /// `TRACKME_LINK`, `TRACKME_PURPOSE` and `TRACKME_ATTEMPT`, and `TRACKME_OUTCOME` when the
    /// purpose is `closed` (nothing of the server's own: a
    /// gateway's credentials belong in the notifier's own file); exit 0 means told, anything else
    /// is tried again. nil: no contact escalation.
    public var contactNotifierCommand: String?
    /// A run of the notifier still going after this long is killed and counts as failed, so one
    /// that hangs holds up the next contact by this much at most.
    public var contactNotifierTimeLimit: Duration = .seconds(30)
    /// Runs per contact before giving up (the last failure stays on the alert's timeline).
    public var contactNotifierAttempts: Int = 5
    /// The wait after the first failed run; each next wait doubles.
    public var contactNotifierBackoff: Duration = .seconds(30)
    /// When contacts are told: the `notifyNextContact` step and `escalationRepeat`.
    public var contactSchedule: DispatchSettings = DispatchSettings()
    /// A contact's link works this long, once.
    public var contactLinkLifetime: Duration = .seconds(3600)
    /// The key links are signed with; instances sharing a database must share it, and it must
    /// outlive a restart for links already sent to keep working. Set here, or read at start from
    /// `contactLinkKeyFile` or the systemd credential `contact-link-key` in
    /// `credentialsDirectory`; otherwise random per process (the server logs a warning).
    public var contactLinkKey: [UInt8] {
        get { givenLinkKey ?? ephemeralLinkKey }
        set { givenLinkKey = newValue }
    }
    var givenLinkKey: [UInt8]?
    private let ephemeralLinkKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
    /// A file whose first line is the link key (at least 16 bytes), read at start.
    public var contactLinkKeyFile: String?
    /// systemd's `$CREDENTIALS_DIRECTORY` (`LoadCredential=contact-link-key:/etc/trackme/link.key`),
    /// used when no key file is given.
    public var credentialsDirectory: String?
    /// How contacts reach this server (`https://console.example`); default `http://HOST:PORT`.
    public var publicURL: String?

    /// Tells the first contact `first` after an unacknowledged alert opened and each next one
    /// `repeatEvery` later (`--contact-after-seconds`, `--contact-repeat-seconds`).
    public mutating func scheduleContacts(first: Duration, repeatEvery: Duration) {
        contactSchedule.escalation = contactSchedule.escalation.map { step in
            step.action == .notifyNextContact ? EscalationStep(after: first, action: step.action) : step
        }
        contactSchedule.escalationRepeat = repeatEvery
    }

    public init(
        sessionLifetime: Duration = .seconds(12 * 3600),
        secureCookies: Bool = false,
        bcryptCost: UInt8 = 12,
        tileURL: String? = nil,
        leafletDirectory: String = "/usr/share/javascript/leaflet"
    ) {
        self.sessionLifetime = sessionLifetime
        self.secureCookies = secureCookies
        self.bcryptCost = bcryptCost
        self.tileURL = tileURL
        self.leafletDirectory = leafletDirectory
    }
}
