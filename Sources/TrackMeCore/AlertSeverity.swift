extension AlertKind {
    /// How grave the condition is, for ordering the dispatcher's board and for deciding whether a
    /// rule firing while an alert is open raises that alert's kind (simulations/SOS-RULES.md).
    /// A missing pulse with skin contact and a lethal rhythm (both a cardiac arrest) are the gravest; a silent strap (a technical fault that
    /// may hide anything) the least.
    public var severity: Int {
        switch self {
        case .noPulse: 5
        case .lethalRhythm: 5
        case .manual: 4
        case .heartRateLow: 3
        case .heartRateHigh: 3
        case .contactLost: 2
        case .strapSilent: 1
        }
    }
}
