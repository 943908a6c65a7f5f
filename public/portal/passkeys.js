// Plaza webhook portal: passkeys. Buttons with data-passkey="register" or "sign-in" run the WebAuthn
// ceremony with @simplewebauthn/browser (served by Plaza at /portal/assets/simplewebauthn-browser.js)
// against the portal's JSON endpoints. Event delegation on document, so it survives htmx swaps.
(function () {
  function csrf() {
    var field = document.querySelector('input[name="_csrf"]');
    return field ? field.value : undefined;
  }
  function post(url, body) {
    return window.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, credentials: 'same-origin', body: JSON.stringify(body) }).then(function (response) {
      if (response.status === 204) return {};
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) throw new Error(data.detail || 'The passkey step failed.');
        return data;
      });
    });
  }
  document.addEventListener('click', function (event) {
    var button = event.target.closest && event.target.closest('[data-passkey]');
    if (!button) return;
    event.preventDefault();
    var status = document.getElementById('passkey-status');
    var say = function (message) { if (status) status.textContent = message; };
    var webauthn = window.SimpleWebAuthnBrowser;
    if (!webauthn || !webauthn.browserSupportsWebAuthn()) return say('This browser does not support passkeys.');
    var done;
    if (button.getAttribute('data-passkey') === 'register') {
      var nameField = document.getElementById('passkey-name');
      var name = (nameField && nameField.value.trim()) || 'Passkey';
      done = post('/portal/account/passkeys/options', { _csrf: csrf() })
        .then(function (options) { return webauthn.startRegistration({ optionsJSON: options }); })
        .then(function (response) { return post('/portal/account/passkeys', { _csrf: csrf(), name: name, response: response }); })
        .then(function () { window.location.assign('/portal/account'); });
    } else {
      var token = button.getAttribute('data-mfa-token') || undefined;
      done = post('/portal/login/passkey/options', { mfa_token: token })
        .then(function (options) { return webauthn.startAuthentication({ optionsJSON: options }); })
        .then(function (response) { return post('/portal/login/passkey', { mfa_token: token, response: response }); })
        .then(function (result) { window.location.assign(result.redirect); });
    }
    say('Waiting for your passkey…');
    done.catch(function (error) { say(error && error.message ? error.message : 'The passkey step failed.'); });
  });
})();
