/// The public spectator page of a run: no account, no cookie needed. It reads only
/// `/v1/public/runs/ID` (consenting runners, no device ids) once a second, and puts every name
/// on the page as text, never as markup (the server's Content-Security-Policy allows scripts
/// from this origin only besides). A finisher shows their time; a runner with no recent fix is
/// shown as such, with the fix's age, and their dot hollow where it last was.
enum RaceAssets {
    // The page, its style and its script are files beside this one, compiled into the binary.
    static let html = String(decoding: PackageResources.race_html, as: UTF8.self)
    static let style = String(decoding: PackageResources.race_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.race_js, as: UTF8.self)
}
