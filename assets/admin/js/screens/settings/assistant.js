// Assistant: this month's use against the cap, and the phone that may talk to it over the
// messaging-app channel (send a code, verify it).

import { html, useState } from '../../lib.js';
import { api } from '../../api.js';
import { getLocale } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { useResource, useAction, ErrorNote, Loading } from '../../ui.js';
import { words, submit, Head, post, Input, Btn } from './common.js';
import { AssistantChat } from './chat.js';

const T = words('as', `
usage|Use this month|Uso neste mês
used|{used} of {cap} messages|{used} de {cap} mensagens
period|{month} (UTC calendar month). The cap comes from your plan.|{month} (mês do calendário UTC). O limite vem do seu plano.
capped|The cap is reached: the assistant answers again next month, or on a bigger plan.|O limite foi atingido: o assistente volta a responder no próximo mês ou num plano maior.
phone|Talk to it from your phone|Fale com ele pelo celular
phone_hint|Your number can chat with the assistant through the store’s messaging-app channel. A new number replaces the earlier one once verified.|O seu número pode conversar com o assistente pelo canal de aplicativo de mensagens da loja. Um número novo substitui o anterior depois de verificado.
number|Phone number (with country code)|Número de telefone (com código do país)
send|Send code|Enviar código
sent|A code was sent to {phone}. It is valid for {min} minutes.|Um código foi enviado para {phone}. Vale por {min} minutos.
code|Code received|Código recebido
verify|Verify|Verificar
verified|{phone} can now talk to the assistant.|{phone} já pode conversar com o assistente.
other|Use another number|Usar outro número
error.invalid_verification_code|That code is not right or expired. Ask for a new one.|Código incorreto ou expirado. Peça um novo.`);

export function AssistantSettings() {
  const { store } = useCtx();
  const usage = useResource(() => api.get(`/stores/${store.id}/assistant/usage`), [store.id]);
  const u = usage.data;
  const month = (iso) => new Intl.DateTimeFormat(getLocale(), { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(new Date(iso));
  return html`<section>
    <${Head} title=${T('nav.assistant')} />
    <${AssistantChat} />
    <div class="grid-even">
      <div class="card" id="assistant-usage">
        <h2>${T('usage')}</h2>
        <${Loading} res=${usage}>
          ${u &&
          html`<p class="big num">${T('used', { used: u.used, cap: u.cap })}</p>
            <meter min="0" max=${u.cap} high=${u.cap * 0.9} value=${u.used} aria-label=${T('usage')}></meter>
            <p class="muted small">${T('period', { month: month(u.period_start) })}</p>
            ${u.used >= u.cap && html`<p class="note warn">${T('capped')}</p>`}`}
        <//>
      </div>
      <${Phone} />
    </div>
  </section>`;
}

function Phone() {
  const { store } = useCtx();
  const base = `/stores/${store.id}/assistant/phones`;
  const [phone, setPhone] = useState('+55');
  const [code, setCode] = useState('');
  const [sent, setSent] = useState(null);
  const [done, setDone] = useState(null);
  const [send, sending, sendError] = useAction(async () => {
    setSent(await post(base, { phone_e164: phone.replace(/[^\d+]/g, '') }));
    setCode('');
  });
  const [verify, verifying, verifyError] = useAction(async () => setDone(await post(`${base}/verify`, { code: code.trim() })));
  return html`<div class="card" id="assistant-phone">
    <h2>${T('phone')}</h2>
    <p class="muted small">${T('phone_hint')}</p>
    ${done
      ? html`<p class="note ok" role="status">${T('verified', { phone: done.phone_e164 })}</p>
          <${Btn} onClick=${() => (setDone(null), setSent(null))}>${T('other')}<//>`
      : sent
        ? html`<form onSubmit=${submit(verify)}>
            <p role="status">${T('sent', { phone: sent.phone_e164, min: Math.round(sent.expires_in_seconds / 60) })}</p>
            <${ErrorNote} error=${verifyError} />
            <${Input} id="assistant-code" label=${T('code')} inputmode="numeric" autocomplete="one-time-code" required maxlength="10" value=${code} set=${setCode} />
            <div class="row">
              <button type="submit" class="btn primary" id="assistant-verify" disabled=${verifying}>${T('verify')}</button>
              <${Btn} cls="ghost" onClick=${() => setSent(null)}>${T('other')}<//>
            </div>
          </form>`
        : html`<form onSubmit=${submit(send)}>
            <${ErrorNote} error=${sendError} />
            <${Input} id="assistant-phone-number" label=${T('number')} type="tel" autocomplete="tel" required placeholder="+5511999990000" value=${phone} set=${setPhone} />
            <button type="submit" class="btn primary" id="assistant-send" disabled=${sending}>${T('send')}</button>
          </form>`}
  </div>`;
}
