public import Hummingbird

extension TrackMeServer {
    /// The server's router (its middleware, handlers and store) as an application that is never
    /// run: Hummingbird's router test mode (HummingbirdTesting's `.router`) hands it requests in
    /// process, without a socket. The simulation's fast mode sends the device's requests through
    /// it. What only a listening server has (the connection guard, TLS, the periodic jobs) is not
    /// there, and the peer of such a request is not loopback.
    public func inProcessApplication() -> Application<RouterResponder<ServerRequestContext>> {
        Application(router: api.makeRouter(), logger: logger)
    }
}
