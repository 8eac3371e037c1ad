// My account: language, password, signed-in devices (revoking this one signs out) and
// two-step sign-in: authenticator app with recovery codes shown once; turning a method off.

import { html, useState } from '../../lib.js';
import { api, auth, call } from '../../api.js';
import { ago, dateTime, LOCALES } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { useResource, usePage, useFlash, Loading } from '../../ui.js';
import { words, word, CopyField, useConfirm, Head, Table, Input, Select, SaveForm, post, Btn, Act, OnOff } from './common.js';

const T = words('me', `
profile|Profile|Perfil
password|Password|Senha
current|Current password|Senha atual
new|New password|Nova senha
new_hint|At least 8 characters.|Pelo menos 8 caracteres.
repeat|New password again|Nova senha de novo
mismatch|The two new passwords differ.|As duas novas senhas são diferentes.
change|Change password|Trocar senha
changed|Password changed. Your other devices were signed out.|Senha trocada. Seus outros aparelhos foram desconectados.
devices|Signed-in devices|Aparelhos conectados
device|Device|Aparelho
signed_in|Signed in|Entrou em
this|this device|este aparelho
revoke|Sign out|Desconectar
revoke_text|Sign out “{name}”? It has to sign in again.|Desconectar “{name}”? Ele vai precisar entrar de novo.
revoke_self|This is the device you are using: you will be signed out.|Este é o aparelho que você está usando: você vai sair.
twofa|Two-step sign-in|Verificação em duas etapas
twofa_intro|After the password, sign-in asks for a code from your phone.|Depois da senha, a entrada pede um código do seu celular.
reauth|Your password|Sua senha
reauth_hint|Needed to turn a method off, and for changes over 10 minutes after signing in.|Necessária para desligar um método, e para mudanças após 10 minutos da entrada.
totp|Authenticator app|Aplicativo autenticador
totp_setup|Set up authenticator app|Configurar aplicativo autenticador
totp_scan|Scan the QR code with your authenticator app (or type the key), then enter the 6-digit code it shows.|Leia o QR code no aplicativo autenticador (ou digite a chave) e informe o código de 6 dígitos que ele mostrar.
totp_secret|Setup key|Chave de configuração
totp_code|Code from the app|Código do aplicativo
totp_enable|Turn on|Ligar
recovery|Recovery codes|Códigos de recuperação
recovery_new|Make new recovery codes|Gerar novos códigos de recuperação
recovery_new_hint|Each code signs you in once without the phone. New codes replace the earlier ones.|Cada código permite entrar uma vez sem o celular. Novos códigos substituem os anteriores.
turn_off|Turn off|Desligar
msgapp|Codes by messaging app|Códigos pelo aplicativo de mensagens
need_password|Type your password first.|Digite sua senha primeiro.
error.reauthentication_required|Type your password: you signed in more than 10 minutes ago.|Digite sua senha: você entrou há mais de 10 minutos.
error.totp_already_enabled|The authenticator app is already on.|O aplicativo autenticador já está ligado.`);

export function AccountSettings() {
  const sessions = usePage('/me/sessions', { limit: 50 });
  return html`<section>
    <${Head} title=${T('nav.account')} />
    <div class="grid-even">
      <${Profile} />
      <${Password} onChanged=${sessions.reload} />
    </div>
    <${Devices} list=${sessions} />
    <${TwoStep} />
  </section>`;
}

function Profile() {
  const { user } = useCtx();
  const [locale, setLocale] = useState(user.locale);
  const run = async () => auth.setUser(await api.patch('/me', { locale }));
  return html`<${SaveForm} id="profile-form" btn="account-locale-save" title=${T('profile')} run=${run}>
    <dl class="facts field"><dt>${T('c.email')}</dt><dd>${user.email}</dd></dl>
    <${Select} id="account-locale" label=${T('c.language')} value=${locale} set=${setLocale} options=${LOCALES.map((l) => [l, word('locale', l)])} />
  <//>`;
}

function Password({ onChanged }) {
  const [pw, setPw] = useState({ current: '', new: '', repeat: '' });
  const [mismatch, setMismatch] = useState(false);
  const run = async () => {
    setMismatch(pw.new !== pw.repeat);
    if (pw.new !== pw.repeat) return false;
    await post('/me/password', { current_password: pw.current, new_password: pw.new });
    setPw({ current: '', new: '', repeat: '' });
    onChanged();
    return T('changed');
  };
  const field = (k, ac, extra) => html`<${Input} id=${`password-${k}`} label=${T(k)} type="password" required autocomplete=${ac}
    value=${pw[k]} set=${(v) => setPw((p) => ({ ...p, [k]: v }))} ...${extra} />`;
  return html`<${SaveForm} id="password-form" btn="password-save" title=${T('password')} label=${T('change')} run=${run}>
    ${field('current', 'current-password')}
    ${field('new', 'new-password', { minlength: 8, maxlength: 256, hint: T('new_hint') })}
    ${field('repeat', 'new-password', { error: mismatch && T('mismatch') })}
  <//>`;
}

function Devices({ list }) {
  const [ask, confirmNode] = useConfirm('session-revoke');
  return html`<h2>${T('devices')}</h2>
    <${Table} id="sessions" list=${list} attrs=${(r) => ({ 'data-session-id': r.id, 'data-current': r.current ? 'true' : undefined })} cols=${[
      [T('device'), (r) => html`${r.device_name || '—'} ${r.current && html`<span class="badge info">${T('this')}</span>`}`],
      [T('c.last_used'), (r) => html`<time datetime=${r.last_used_at} title=${dateTime(r.last_used_at)}>${ago(r.last_used_at)}</time>`],
      [T('signed_in'), (r) => dateTime(r.created_at)],
      ['', (r) => html`<${Btn} cls="ghost" data-action="revoke" aria-label=${`${T('revoke')}: ${r.device_name}`}
        onClick=${() => ask(T('revoke'), T(r.current ? 'revoke_self' : 'revoke_text', { name: r.device_name }), async () => {
          await api.del(`/me/sessions/${r.id}`);
          if (r.current) return auth.logout();
          list.reload();
        })}>${T('revoke')}<//>`, 'right'],
    ]} />
    ${confirmNode}`;
}

function TwoStep() {
  const me = useResource(() => api.get('/me'), []);
  const [password, setPassword] = useState('');
  const [codes, setCodes] = useState(null);
  const [flash, flashNode] = useFlash();
  const tf = me.data?.two_factor;
  const reauth = () => (password ? { password } : {});
  const newCodes = async () => setCodes((await post('/me/2fa/recovery-codes', reauth())).codes);
  const done = () => {
    flash(T('c.saved'));
    me.reload();
  };
  const ctx = { password, reauth, done, newCodes };
  return html`<div class="card" id="two-step">
    <h2>${T('twofa')}</h2>
    <p class="muted small">${T('twofa_intro')}</p>
    ${flashNode}
    <${Loading} res=${me}>
      ${tf &&
      html`<${Input} id="twofa-password" label=${T('reauth')} hint=${T('reauth_hint')} type="password" autocomplete="current-password" value=${password} set=${setPassword} />
        ${codes && html`<${CopyField} id="recovery-codes" label=${T('recovery')} value=${codes.join('\n')} multiline once hint=${T('recovery_new_hint')} />`}
        <div class="grid-even">
          <${Totp} on=${tf.totp} ctx=${ctx} />
          ${tf.msgapp && html`<${Method} id="msgapp-2fa" k="msgapp" on ctx=${ctx} />`}
        </div>
        ${(tf.totp || tf.msgapp) &&
        html`<div class="method">
          <h3>${T('recovery')}</h3>
          <p class="muted small">${T('recovery_new_hint')}</p>
          <${Act} id="recovery-new" run=${newCodes}>${T('recovery_new')}<//>
        </div>`}`}
    <//>
  </div>`;
}

// A method's state, then "Turn off" (needs the password above) or `children`. Messaging-app
// codes are only turned off here.
const Method = ({ id, k, on, ctx, children }) => html`<div class="method" id=${id}>
  <h3>${T(k)} <${OnOff} on=${on} /></h3>
  ${on
    ? html`<${Act} id=${`${k}-off`} run=${async () => {
        if (!ctx.password) throw { message: T('need_password') };
        await call('DELETE', `/me/2fa/${k}`, { body: { password: ctx.password } });
        ctx.done();
      }}>${T('turn_off')}<//>`
    : children}
</div>`;

function Totp({ on, ctx }) {
  const [setup, setSetup] = useState(null);
  const [code, setCode] = useState('');
  // Turning it on also makes recovery codes: fetched fresh and shown once.
  const enable = async () => {
    await post('/me/2fa/totp/enable', { totp_code: code.trim(), ...ctx.reauth() });
    setSetup(null);
    setCode('');
    ctx.done();
    await ctx.newCodes();
    return false;
  };
  return html`<${Method} id="totp" k="totp" on=${on} ctx=${ctx}>
    ${setup
      ? html`<${SaveForm} id="totp-form" btn="totp-enable" card=${false} label=${T('totp_enable')} run=${enable}>
          <p class="small">${T('totp_scan')}</p>
          <img id="totp-qr" class="qr" src=${`data:image/png;base64,${setup.qr_png_base64}`} width="200" height="200" alt=${T('totp')} />
          <${CopyField} id="totp-secret" label=${T('totp_secret')} value=${setup.secret} />
          <${Input} id="totp-code" label=${T('totp_code')} inputmode="numeric" autocomplete="one-time-code" required maxlength="6" value=${code} set=${setCode} />
        <//>`
      : html`<${Act} cls="primary" id="totp-setup" run=${async () => setSetup(await api.get('/me/2fa/totp/setup'))}>${T('totp_setup')}<//>`}
  <//>`;
}
