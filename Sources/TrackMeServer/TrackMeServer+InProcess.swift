public import Hummingbird

extension TrackMeServer {
    /// The server's router (its middleware, handlers and store) as a responder to hand requests
    /// to directly, in process, without a socket: the simulation's fast mode sends the device's
    /// requests through it (`InProcessRouter`). What only a listening server has (the
    /// connection guard, TLS, the periodic jobs) is not there.
    public func inProcessResponder() -> RouterResponder<ServerRequestContext> {
        hall.makeRouter().buildResponder()
    }
}
