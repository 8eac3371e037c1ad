// Sign-in (spec 2.4 and 5): e-mail and password, then, when the account has a second
// factor, an authenticator code, a messaging-app code or a recovery code on the challenge.

import { html, useState, useRef, useEffect } from '../lib.js';
import { auth, adopt } from '../api.js';
import { t, words, errorMessage } from '../i18n.js';
import { Field, useAction, formSubmit } from '../ui.js';

words('signin', `
title|Sign in|Entrar
email|E-mail
password|Password|Senha
submit|Sign in|Entrar
second_title|Confirm it is you|Confirme que é você
totp|Code from your authenticator app|Código do aplicativo autenticador
totp_hint|6 digits, they change every 30 seconds.|6 dígitos, mudam a cada 30 segundos.
msgapp|Code sent by the messaging app|Código enviado pelo aplicativo de mensagens
msgapp_send|Send me a code|Enviar um código
msgapp_resend|Send a new code|Enviar outro código
msgapp_sent|Code sent to {to}. It is valid for 5 minutes.|Código enviado para {to}. Vale por 5 minutos.
recovery|Recovery code|Código de recuperação
recovery_hint|One of the codes you saved when you turned on two-step sign-in. Each works once.|Um dos códigos que você guardou ao ativar a verificação em duas etapas. Cada um vale uma vez.
verify|Confirm|Confirmar
use_totp|Use the authenticator app|Usar o aplicativo autenticador
use_msgapp|Get a code by messaging app|Receber código pelo aplicativo de mensagens
use_recovery|Use a recovery code|Usar um código de recuperação
start_over|Start over|Recomeçar
tagline|Your store’s back office.|O escritório da sua loja.
first_run|First time? The first account is made on the server: merchant-admin setup.|Primeira vez? A primeira conta é criada no servidor: merchant-admin setup.
insecure|This connection is not encrypted (http): anyone on the network can read it. Put the server behind HTTPS before using it over the internet.|Esta conexão não é criptografada (http): qualquer um na rede pode lê-la. Coloque o servidor atrás de HTTPS antes de usá-lo pela internet.
`);

export function SignIn() {
  const [challenge, setChallenge] = useState(null);
  return html`<main class="signin" id="main">
    <div class="card narrow">
      <div class="signin-brand"><img src="/admin/icon.svg" alt="" width="40" height="40" />
        <div><p class="brand-name">merchant-admin</p><p class="muted small">${t('signin.tagline')}</p></div>
      </div>
      ${!isSecureContext && html`<p class="note warn" id="signin-insecure">${t('signin.insecure')}</p>`}
      ${challenge
        ? html`<${SecondFactor} challenge=${challenge} onRestart=${() => setChallenge(null)} />`
        : html`<${Password} onChallenge=${setChallenge} />`}
      <p class="muted small signin-first">${t('signin.first_run')}</p>
    </div>
  </main>`;
}

function Password({ onChallenge }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [submit, busy, error] = useAction(async () => {
    const r = await auth.login(email.trim(), password);
    if (r.status === 'two_factor_required') {
      onChallenge({ id: r.challenge, methods: r.methods || [] });
    } else {
      adopt(r);
    }
  });
  return html`<form onSubmit=${formSubmit(submit)}>
    <h1 tabindex="-1">${t('signin.title')}</h1>
    ${error && html`<p class="note bad" role="alert">${errorMessage(error)}</p>`}
    <${Field} label=${t('signin.email')} id="signin-email">
      <input id="signin-email" type="email" autocomplete="username" required value=${email}
        onInput=${(e) => setEmail(e.target.value)} />
    <//>
    <${Field} label=${t('signin.password')} id="signin-password">
      <input id="signin-password" type="password" autocomplete="current-password" required value=${password}
        onInput=${(e) => setPassword(e.target.value)} />
    <//>
    <button class="btn primary wide" type="submit" disabled=${busy}>${t('signin.submit')}</button>
  </form>`;
}

function SecondFactor({ challenge, onRestart }) {
  const methods = challenge.methods.filter((m) => m === 'totp' || m === 'msgapp');
  const [method, setMethod] = useState(methods[0] || 'recovery');
  const [code, setCode] = useState('');
  const [sentTo, setSentTo] = useState(null);
  const input = useRef(null);
  useEffect(() => input.current?.focus(), [method]);
  const [send, sending, sendError] = useAction(async () => {
    const r = await auth.sendOtp(challenge.id);
    setSentTo(r.sent_to);
  });
  const [verify, busy, error, setError] = useAction(async () => {
    const value = code.trim();
    const session =
      method === 'totp'
        ? await auth.totp(challenge.id, value.replace(/\s/g, ''))
        : method === 'msgapp'
          ? await auth.otp(challenge.id, value.replace(/\s/g, ''))
          : await auth.recovery(challenge.id, value);
    adopt(session);
  });
  const expired = error && (error.code === 'invalid_challenge' || error.code === 'rate_limited');
  const pick = (m) => {
    setMethod(m);
    setCode('');
    setError(null);
  };
  const label = { totp: t('signin.totp'), msgapp: t('signin.msgapp'), recovery: t('signin.recovery') }[method];
  const shownError = error || sendError;
  return html`<form onSubmit=${formSubmit(verify)}>
    <h1 tabindex="-1">${t('signin.second_title')}</h1>
    ${shownError && html`<p class="note bad" role="alert">${errorMessage(shownError)}</p>`}
    ${method === 'msgapp' &&
    html`<p>
      <button type="button" class="btn" disabled=${sending} onClick=${send}>
        ${sentTo ? t('signin.msgapp_resend') : t('signin.msgapp_send')}
      </button>
    </p>
    ${sentTo && html`<p class="note ok" role="status">${t('signin.msgapp_sent', { to: sentTo })}</p>`}`}
    <${Field} label=${label} id="signin-code"
      hint=${method === 'totp' ? t('signin.totp_hint') : method === 'recovery' ? t('signin.recovery_hint') : null}>
      <input id="signin-code" ref=${input} required value=${code}
        autocomplete="one-time-code"
        inputmode=${method === 'recovery' ? 'text' : 'numeric'}
        aria-describedby="signin-code-hint"
        onInput=${(e) => setCode(e.target.value)} />
    <//>
    <button class="btn primary wide" type="submit" disabled=${busy || expired}>${t('signin.verify')}</button>
    <div class="alt-methods">
      ${methods.includes('totp') && method !== 'totp' &&
      html`<button type="button" class="link" onClick=${() => pick('totp')}>${t('signin.use_totp')}</button>`}
      ${methods.includes('msgapp') && method !== 'msgapp' &&
      html`<button type="button" class="link" onClick=${() => pick('msgapp')}>${t('signin.use_msgapp')}</button>`}
      ${method !== 'recovery' &&
      html`<button type="button" class="link" onClick=${() => pick('recovery')}>${t('signin.use_recovery')}</button>`}
      <button type="button" class="link" onClick=${onRestart}>${t('signin.start_over')}</button>
    </div>
  </form>`;
}
