/// The console's page and style, shipped inside the server binary (no Node build, no CDN).
enum ConsoleAssets {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>TrackMe console</title>
        <link rel="stylesheet" href="/assets/console.css">
        <script src="/assets/console.js" defer></script>
        </head>
        <body>
        <section id="signin" hidden>
          <h1>TrackMe console</h1>
          <form id="signin-form">
            <label>Username <input id="username" name="username" autocomplete="username" required></label>
            <label>Password <input id="password" name="password" type="password" autocomplete="current-password" required></label>
            <button id="signin-button" type="submit">Sign in</button>
            <p id="signin-message" role="alert"></p>
          </form>
        </section>
        <section id="console" hidden>
          <header>
            <h1>TrackMe console</h1>
            <nav>
              <button class="tab" data-tab="board" aria-pressed="true">Open alerts <span id="open-count">0</span></button>
              <button class="tab" data-tab="devices" aria-pressed="false">Devices</button>
              <button class="tab" data-tab="history" aria-pressed="false">History</button>
              <button class="tab" data-tab="accounts" aria-pressed="false" id="accounts-tab" hidden>Accounts</button>
            </nav>
            <span id="feed-status" class="feed-status">connecting</span>
            <span id="whoami"></span>
            <button id="signout" type="button">Sign out</button>
          </header>
          <main>
            <section id="board" class="panel"><p class="empty">No open alerts.</p></section>
            <section id="devices" class="panel" hidden><div id="device-list"></div><div id="care" hidden></div></section>
            <section id="history" class="panel" hidden></section>
            <section id="accounts" class="panel" hidden>
              <form id="account-form">
                <h2>New dispatcher</h2>
                <label>Username <input id="new-username" required></label>
                <label>Name <input id="new-display-name" required></label>
                <label>Password <input id="new-password" type="password" minlength="8" required></label>
                <button id="account-create" type="submit">Create</button>
                <p id="account-message" role="status"></p>
              </form>
              <table id="account-list"></table>
            </section>
          </main>
        </section>
        </body>
        </html>
        """#

    static let style = #"""
        :root { --bg: #10141a; --panel: #1b222c; --text: #e8edf2; --muted: #9aa7b4; --crit: #e5484d; --warn: #f5a524; --ok: #46a758; --line: #2f3a47; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); }
        h1 { font-size: 1.2rem; margin: 0 1rem 0 0; }
        h2 { font-size: 1rem; margin: .5rem 0; }
        h3 { font-size: .95rem; margin: .6rem 0 .2rem; color: var(--muted); }
        button { background: #2b3644; color: var(--text); border: 1px solid var(--line); border-radius: 4px; padding: .3rem .7rem; cursor: pointer; }
        button:hover { background: #364456; }
        button.primary { background: #1f5fbf; border-color: #1f5fbf; }
        input, select, textarea { background: #0c1015; color: var(--text); border: 1px solid var(--line); border-radius: 4px; padding: .3rem; }
        #signin { max-width: 22rem; margin: 4rem auto; background: var(--panel); padding: 1.5rem; border-radius: 8px; }
        #signin label { display: block; margin: .6rem 0; }
        #signin input { width: 100%; }
        #signin-message { color: var(--crit); min-height: 1.2em; }
        header { display: flex; align-items: center; gap: .8rem; padding: .6rem 1rem; background: var(--panel); border-bottom: 1px solid var(--line); flex-wrap: wrap; }
        nav { display: flex; gap: .4rem; flex: 1; }
        .tab[aria-pressed="true"] { background: #1f5fbf; }
        .feed-status { font-size: .8rem; color: var(--muted); }
        .feed-status.live { color: var(--ok); }
        main { padding: 1rem; }
        .empty { color: var(--muted); }
        .alert-card { background: var(--panel); border-left: 6px solid var(--warn); border-radius: 6px; padding: .8rem 1rem; margin-bottom: 1rem; display: grid; grid-template-columns: minmax(16rem, 1fr) minmax(16rem, 1fr) minmax(18rem, 1.2fr); gap: 1rem; }
        .alert-card.severe { border-left-color: var(--crit); }
        .alert-card.acknowledged { border-left-style: dashed; }
        .alert-card .title { font-size: 1.1rem; font-weight: 600; }
        .kind { display: inline-block; padding: 0 .4rem; border-radius: 3px; background: var(--crit); color: #fff; font-size: .85rem; }
        .muted { color: var(--muted); }
        ol.timeline { margin: 0; padding-left: 1.2rem; font-size: .85rem; }
        ul.plain { margin: 0; padding-left: 1.1rem; font-size: .9rem; }
        .actions { display: flex; gap: .4rem; flex-wrap: wrap; margin-top: .5rem; align-items: center; }
        .map { width: 100%; height: 200px; background: #0c1015; border: 1px solid var(--line); border-radius: 4px; }
        svg.hr { width: 100%; height: 60px; background: #0c1015; border: 1px solid var(--line); border-radius: 4px; }
        .notes li { white-space: pre-wrap; }
        table { border-collapse: collapse; width: 100%; background: var(--panel); }
        td, th { border-bottom: 1px solid var(--line); padding: .35rem .6rem; text-align: left; font-size: .9rem; }
        tr.silent td { color: var(--crit); }
        .badge { font-size: .75rem; padding: 0 .35rem; border-radius: 3px; background: var(--crit); color: #fff; }
        .history-item { background: var(--panel); border-radius: 6px; padding: .6rem 1rem; margin-bottom: .6rem; }
        #account-form { background: var(--panel); padding: 1rem; border-radius: 6px; margin-bottom: 1rem; display: flex; gap: .6rem; flex-wrap: wrap; align-items: end; }
        #account-form h2 { width: 100%; }
        #care { background: var(--panel); padding: 1rem; border-radius: 6px; margin-top: 1rem; }
        #care form { display: flex; gap: .6rem; flex-wrap: wrap; align-items: end; }
        #care input[type=number] { width: 5rem; }
        #care textarea { width: 100%; min-height: 3.5rem; }
        #care label.wide { width: 100%; }
        #care .conflict { color: var(--crit); }
        """#
}
