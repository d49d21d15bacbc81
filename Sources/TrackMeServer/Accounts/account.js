// The account pages: sign-up (and the verification link), reset (asking for a link, then the
// new password from the link) and change of password. The link's token is in the fragment,
// so it never reaches a server log or a Referer; everything shown is set as text.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);

  function say(text, kind) {
    const message = $('message');
    message.textContent = text;
    message.className = kind || '';
  }

  async function call(method, path, body, csrf) {
    const headers = { 'Content-Type': 'application/json' };
    if (csrf) headers['X-CSRF-Token'] = csrf;
    const response = await fetch(path, {
      method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body)
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = {}; }
    return { status: response.status, data };
  }

  function problem(answer) {
    const error = answer.data && answer.data.error;
    if (answer.status === 429) return 'Too many attempts: please wait a little and try again.';
    if (!error) return 'Something went wrong (' + answer.status + '). Please try again.';
    // A link's error speaks of the link; a field's names the field.
    const named = error.field && error.field !== 'token';
    return (named ? error.field.replace('_', ' ') + ': ' : '') + error.message;
  }

  async function busy(button, work) {
    button.disabled = true;
    try { await work(); } catch (e) { say('The server could not be reached. Please try again.', 'error'); }
    finally { button.disabled = false; }
  }

  function show(id, title) {
    $(id).hidden = false;
    $('title').textContent = title;
    document.title = title + ' — TrackMe';
  }

  function token() { return decodeURIComponent(location.hash.replace(/^#/, '')); }

  async function signUp() {
    show('sign-up', 'Sign up');
    const state = await call('GET', '/v1/sign-up');
    if (state.status === 200) {
      for (const node of document.querySelectorAll('.min-length')) node.textContent = String(state.data.minimum_password_characters);
      if (!state.data.open) {
        $('sign-up-closed').textContent = state.data.reason;
        $('sign-up-closed').hidden = false;
        $('sign-up-form').hidden = true;
        return;
      }
    }
    $('sign-up-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const form = event.target;
      busy($('sign-up-submit'), async () => {
        const answer = await call('POST', '/v1/sign-up', {
          username: form.username.value, display_name: form.display_name.value, email: form.email.value,
          password: form.password.value, role: form.role.value
        });
        if (answer.status === 202) {
          form.hidden = true;
          say('Almost done: we sent a link to ' + answer.data.email + '. Open it to verify your address, then sign in.', 'done');
        } else {
          say(problem(answer), 'error');
        }
      });
    });
  }

  async function verify() {
    show('verify', 'Verify your address');
    const answer = await call('POST', '/v1/sign-up/verify', { token: token() });
    $('verify').hidden = true;
    if (answer.status === 200) say('Your address is verified. You can sign in now as ' + answer.data.username + '.', 'done');
    else say(problem(answer), 'error');
  }

  function resetRequest() {
    show('reset-request', 'Forgot your password?');
    $('reset-request-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const login = event.target.login.value.trim();
      busy($('reset-request-submit'), async () => {
        const answer = await call('POST', '/v1/password-reset', login.includes('@') && !login.startsWith('@') ? { email: login, username: login } : { username: login });
        if (answer.status === 202) {
          event.target.hidden = true;
          say(answer.data.message, 'done');
        } else {
          say(problem(answer), 'error');
        }
      });
    });
  }

  function resetConfirm() {
    show('reset-confirm', 'Set a new password');
    $('reset-confirm-form').addEventListener('submit', (event) => {
      event.preventDefault();
      busy($('reset-confirm-submit'), async () => {
        const answer = await call('POST', '/v1/password-reset/confirm', { token: token(), password: event.target.password.value });
        if (answer.status === 200) {
          event.target.hidden = true;
          history.replaceState(null, '', location.pathname);
          say('Your new password is set, and every browser signed in to ' + answer.data.username + ' has been signed out. Sign in with it now.', 'done');
        } else {
          say(problem(answer), 'error');
        }
      });
    });
  }

  async function change() {
    show('change', 'Change your password');
    const session = await call('GET', '/v1/session');
    if (session.status !== 200) {
      $('change-form').hidden = true;
      say('Sign in first, then come back to change your password.', 'error');
      return;
    }
    $('change-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const form = event.target;
      busy($('change-submit'), async () => {
        const answer = await call('POST', '/v1/session/password', {
          current_password: form.current_password.value, new_password: form.new_password.value
        }, session.data.csrf_token);
        if (answer.status === 200) {
          form.hidden = true;
          say('Your password is changed. Other browsers signed in to your account have been signed out.', 'done');
        } else {
          say(problem(answer), 'error');
        }
      });
    });
  }

  // A link opened in a tab already on this page changes only the fragment: start again with it.
  window.addEventListener('hashchange', () => location.reload());

  const path = location.pathname;
  if (path === '/account/verify') verify();
  else if (path === '/account/reset') (location.hash.length > 1 ? resetConfirm : resetRequest)();
  else if (path === '/account/password') change();
  else signUp();
})();
