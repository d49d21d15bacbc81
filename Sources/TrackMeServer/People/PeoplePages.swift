import Hummingbird

/// The people's page at `/people`: a wearer's own data, their consents and who read what; an
/// organisation's requests, reads and group figures; a carer's people. Same sign-in, session,
/// stylesheet and headers as the console; the page and its script are `people.html` and
/// `people.js` beside this file, and every value from the server goes in with `textContent`.
struct PeoplePages: Sendable {
    let api: ServerAPI

    func register(on router: Router<ServerRequestContext>) {
        let console = ConsoleRoutes(api: api)
        router.get("/people") { request, _ in console.serve(WebPages.people, request) }
        router.get("/assets/people.js") { request, _ in console.serve(WebPages.peopleScript, request) }
        router.get("/assets/protection.js") { request, _ in console.serve(WebPages.protectionScript, request) }
    }
}
