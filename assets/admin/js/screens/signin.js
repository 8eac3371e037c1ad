// Sign-in (spec 2.4 and 5): e-mail and password, then, when the account has a second
// factor, an authenticator code, a messaging-app code or a recovery code on the challenge.

import { html, useState, useRef, useEffect } from '../lib.js';
import { auth, adopt } from '../api.js';
import { t, define, errorMessage } from '../i18n.js';
import { Field, useAction } from '../ui.js';

define({
  'en-US': {
    'signin.title': 'Sign in',
    'signin.email': 'E-mail',
    'signin.password': 'Password',
    'signin.submit': 'Sign in',
    'signin.second_title': 'Confirm it is you',
    'signin.totp': 'Code from your authenticator app',
    'signin.totp_hint': '6 digits, they change every 30 seconds.',
    'signin.msgapp': 'Code sent by the messaging app',
    'signin.msgapp_send': 'Send me a code',
    'signin.msgapp_resend': 'Send a new code',
    'signin.msgapp_sent': 'Code sent to {to}. It is valid for 5 minutes.',
    'signin.recovery': 'Recovery code',
    'signin.recovery_hint': 'One of the codes you saved when you turned on two-step sign-in. Each works once.',
    'signin.verify': 'Confirm',
    'signin.use_totp': 'Use the authenticator app',
    'signin.use_msgapp': 'Get a code by messaging app',
    'signin.use_recovery': 'Use a recovery code',
    'signin.start_over': 'Start over',
    'signin.tagline': 'Your store’s back office.',
  },
  'pt-BR': {
    'signin.title': 'Entrar',
    'signin.email': 'E-mail',
    'signin.password': 'Senha',
    'signin.submit': 'Entrar',
    'signin.second_title': 'Confirme que é você',
    'signin.totp': 'Código do aplicativo autenticador',
    'signin.totp_hint': '6 dígitos, mudam a cada 30 segundos.',
    'signin.msgapp': 'Código enviado pelo aplicativo de mensagens',
    'signin.msgapp_send': 'Enviar um código',
    'signin.msgapp_resend': 'Enviar outro código',
    'signin.msgapp_sent': 'Código enviado para {to}. Vale por 5 minutos.',
    'signin.recovery': 'Código de recuperação',
    'signin.recovery_hint': 'Um dos códigos que você guardou ao ativar a verificação em duas etapas. Cada um vale uma vez.',
    'signin.verify': 'Confirmar',
    'signin.use_totp': 'Usar o aplicativo autenticador',
    'signin.use_msgapp': 'Receber código pelo aplicativo de mensagens',
    'signin.use_recovery': 'Usar um código de recuperação',
    'signin.start_over': 'Recomeçar',
    'signin.tagline': 'O escritório da sua loja.',
  },
});

export function SignIn() {
  const [challenge, setChallenge] = useState(null);
  return html`<main class="signin" id="main">
    <div class="card narrow">
      <div class="signin-brand"><img src="/admin/icon.svg" alt="" width="40" height="40" />
        <div><p class="brand-name">merchant-admin</p><p class="muted small">${t('signin.tagline')}</p></div>
      </div>
      ${challenge
        ? html`<${SecondFactor} challenge=${challenge} onRestart=${() => setChallenge(null)} />`
        : html`<${Password} onChallenge=${setChallenge} />`}
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
  return html`<form onSubmit=${(e) => {
    e.preventDefault();
    submit();
  }}>
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
  return html`<form onSubmit=${(e) => {
    e.preventDefault();
    verify();
  }}>
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
