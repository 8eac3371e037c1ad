// Plan and billing: subscription and usage, change plan or cycle, cancel / resume, pay by
// Pix (code and QR), invoices. Owners only: anyone else sees the API's refusal.

import { html, useState, useEffect } from '../../lib.js';
import { api } from '../../api.js';
import { money, date } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { useResource, usePage, useAction, ErrorNote, Dialog, Loading, Badge, Money } from '../../ui.js';
import { words, word, CopyField, useConfirm, submit, Head, Table, post, Btn, Act, Actions } from './common.js';

const T = words('bill', `
plan|Current plan|Plano atual
plans|Plan|Plano
period|Current period|Período atual
trial_ends|Trial ends|Teste termina
ends|Canceled: it stays usable until {date} and does not renew.|Cancelada: continua funcionando até {date} e não renova.
pending_plan|Changes to {plan} on {date}.|Muda para {plan} em {date}.
pending_cycle|Billed {cycle} from {date}.|Cobrança {cycle} a partir de {date}.
usage|Usage|Uso
of|{used} of {max}|{used} de {max}
limit.stores|Stores|Lojas
limit.members_per_store|Members per store|Membros por loja
limit.products|Products|Produtos
limit.orders_per_month|Orders this month|Pedidos neste mês
limit.assistant_messages_per_store_per_month|Assistant messages this month|Mensagens ao assistente neste mês
change|Change plan|Mudar de plano
change_hint|A dearer plan starts now (an invoice covers the rest of the period); a cheaper plan or a new cycle, when the period ends.|Um plano mais caro vale na hora (uma fatura cobre o resto do período); um mais barato ou outra periodicidade, no fim do período.
cycle|Billing|Cobrança
cycle.monthly|monthly|mensal
cycle.annual|yearly|anual
per_month|{price}/month|{price}/mês
per_year|{price}/year|{price}/ano
apply|Change|Mudar
exceeded|{limit}: you use {used}, the plan allows {max}.|{limit}: você usa {used}, o plano permite {max}.
cancel|Cancel subscription|Cancelar assinatura
cancel_text|Cancel the subscription? It works until {date}, then stops; you can resume it before then.|Cancelar a assinatura? Ela funciona até {date} e depois para; dá para retomá-la antes.
resume|Resume subscription|Retomar assinatura
pay_title|Payment|Pagamento
due|Invoice {number}: {amount}, due {date}.|Fatura {number}: {amount}, vence em {date}.
nothing_due|Nothing is due now.|Nada a pagar agora.
pay|Pay with Pix|Pagar com Pix
pix_code|Pix copy and paste|Pix copia e cola
pix_hint|Paste it in your bank’s app, or scan the QR code. Payable until {date}.|Cole no app do seu banco ou leia o QR code. Pode ser pago até {date}.
qr|Pix QR code for invoice {number}|QR code Pix da fatura {number}
invoices|Invoices|Faturas
for|Period|Período
reason|Reason|Motivo
no_invoices|No invoice yet.|Nenhuma fatura ainda.
number|Invoice|Fatura
amount|Amount|Valor
due_at|Due|Vencimento
paid_at|Paid|Pago em
sub.trialing|Trial|Teste
sub.active|Active|Ativa
sub.past_due|Past due|Em atraso
sub.suspended|Suspended|Suspensa
sub.canceled|Canceled|Cancelada
inv.open|Open|Em aberto
inv.paid|Paid|Paga
inv.void|Void|Anulada
reason.subscription_create|First invoice|Primeira fatura
reason.subscription_cycle|Renewal|Renovação
reason.subscription_update|Plan change|Mudança de plano
reason.subscription_resume|Reactivation|Reativação
error.service_unavailable|Not available on this server yet. Contact support.|Ainda não disponível neste servidor. Fale com o suporte.`);

const SUB_TONES = { trialing: 'info', active: 'ok', past_due: 'warn', suspended: 'bad', canceled: 'muted' };
const LIMITS = [
  ['stores', 'stores'],
  ['members_per_store', 'members'],
  ['products', 'products'],
  ['orders_per_month', 'orders_this_month'],
  ['assistant_messages_per_store_per_month', 'assistant_messages_this_month'],
];

export function BillingSettings() {
  const { store } = useCtx();
  const base = `/tenants/${store.tenant_id}`;
  const sub = useResource(() => api.get(`${base}/subscription`), [base]);
  const plans = useResource(() => api.get('/billing/plans'), []);
  const invoices = usePage(`${base}/invoices`, { limit: 12 });
  const [changing, setChanging] = useState(false);
  const [ask, confirmNode] = useConfirm('subscription-cancel');
  const s = sub.data;
  const planName = (code) => plans.data?.data.find((p) => p.code === code)?.name || code;
  const updated = (next) => {
    sub.setData(next);
    invoices.reload();
  };
  const [resume, resuming, resumeError] = useAction(async () => updated(await post(`${base}/subscription/resume`)));
  const note = (tone, text) => html`<p class=${`note ${tone} spaced`}>${text}</p>`;
  const end = s && date(s.current_period_end);
  return html`<section>
    <${Head} title=${T('nav.billing')} />
    <${Loading} res=${sub}>
      ${s &&
      html`<div class="grid-2">
        <div class="card" id="subscription">
          <div class="page-head">
            <h2>${T('plan')}: ${planName(s.plan_code)}</h2>
            <${Badge} value=${s.status} tones=${SUB_TONES} label=${word('sub', s.status)} />
          </div>
          <dl class="facts">
            <dt>${T('cycle')}</dt><dd>${word('cycle', s.billing_cycle)}</dd>
            <dt>${T('period')}</dt><dd>${date(s.current_period_start)} – ${end}</dd>
            ${s.status === 'trialing' && s.trial_ends_at && html`<dt>${T('trial_ends')}</dt><dd>${date(s.trial_ends_at)}</dd>`}
          </dl>
          ${s.cancel_at_period_end && note('warn', T('ends', { date: end }))}
          ${s.pending_plan_code && note('info', T('pending_plan', { plan: planName(s.pending_plan_code), date: end }))}
          ${s.pending_billing_cycle && note('info', T('pending_cycle', { cycle: word('cycle', s.pending_billing_cycle), date: end }))}
          <h3 class="spaced">${T('usage')}</h3>
          <dl class="facts usage">
            ${LIMITS.map(([limit, used]) => {
              const max = s.limits[limit];
              const label = word('limit', limit);
              return html`<dt>${label}</dt>
                <dd><meter min="0" max=${max} high=${max * 0.9} value=${s.usage[used]} aria-label=${label}></meter>
                  <span class="num">${T('of', { used: s.usage[used], max })}</span></dd>`;
            })}
          </dl>
          <${ErrorNote} error=${resumeError} />
          <div class="row spaced">
            <${Btn} cls="primary" id="plan-change" onClick=${() => setChanging(true)}>${T('change')}<//>
            ${s.cancel_at_period_end || s.status === 'canceled'
              ? html`<${Btn} id="subscription-resume" disabled=${resuming} onClick=${resume}>${T('resume')}<//>`
              : html`<${Btn} cls="ghost" id="subscription-cancel-open"
                  onClick=${() => ask(T('cancel'), T('cancel_text', { date: end }), async () => updated(await post(`${base}/subscription/cancel`)))}>${T('cancel')}<//>`}
          </div>
        </div>
        <${Pay} base=${base} s=${s} />
      </div>
      <${Dialog} open=${changing} id="plan-dialog" title=${T('change')} onClose=${() => setChanging(false)}>
        <${PlanForm} s=${s} plans=${plans} base=${base} onClose=${() => setChanging(false)} onDone=${(next) => (setChanging(false), updated(next))} />
      <//>`}
    <//>
    <h2>${T('invoices')}</h2>
    <${Table} id="invoices" list=${invoices} none=${T('no_invoices')} attrs=${(i) => ({ 'data-invoice-id': i.id })} cols=${[
      [T('number'), (i) => html`<span class="mono num">${i.number}</span>`],
      [T('for'), (i) => `${date(i.period_start)} – ${date(i.period_end)}`],
      [T('reason'), (i) => word('reason', i.billing_reason)],
      [T('amount'), (i) => html`<${Money} cents=${i.amount_cents} currency=${i.currency} />`, 'num'],
      [T('c.status'), (i) => html`<${Badge} value=${i.status} tones=${{ open: 'warn', paid: 'ok' }} label=${word('inv', i.status)} />`],
      [T('due_at'), (i) => date(i.due_at)],
      [T('paid_at'), (i) => (i.paid_at ? date(i.paid_at) : '—')],
    ]} />
    ${confirmNode}
  </section>`;
}

function Pay({ base, s }) {
  const [invoice, setInvoice] = useState(s.open_invoice?.pix ? s.open_invoice : null);
  const due = invoice || s.open_invoice;
  return html`<div class="card" id="payment">
    <h2>${T('pay_title')}</h2>
    <p>${due ? T('due', { number: due.number, amount: money(due.amount_cents, due.currency), date: date(due.due_at) }) : T('nothing_due')}</p>
    ${invoice?.pix
      ? html`<${Pix} base=${base} invoice=${invoice} />`
      : html`<${Act} cls="primary" id="billing-pay" run=${async () => setInvoice(await post(`${base}/subscription/pay`))}>${T('pay')}<//>`}
  </div>`;
}

function Pix({ base, invoice }) {
  const qr = useResource(() => api.blobUrl(`${base}/invoices/${invoice.id}/pix.png`), [invoice.id]);
  useEffect(() => () => qr.data && URL.revokeObjectURL(qr.data), [qr.data]);
  return html`${qr.data && html`<img id="pix-qr" class="qr" src=${qr.data} width="200" height="200" alt=${T('qr', { number: invoice.number })} />`}
    <${ErrorNote} error=${qr.error} onRetry=${qr.reload} />
    <${CopyField} id="pix-code" label=${T('pix_code')} value=${invoice.pix.copy_paste} multiline hint=${T('pix_hint', { date: date(invoice.pix.expires_at) })} />`;
}

function PlanForm({ s, plans, base, onClose, onDone }) {
  const [plan, setPlan] = useState(s.pending_plan_code || s.plan_code);
  const [cycle, setCycle] = useState(s.pending_billing_cycle || s.billing_cycle);
  const [save, busy, error] = useAction(async () => onDone(await api.put(`${base}/subscription`, { plan_code: plan, billing_cycle: cycle })));
  const exceeded = (error?.code === 'usage_exceeds_plan' && error.details?.exceeded) || [];
  const radio = (name, v, on, set, label, cls = 'check') => html`<label class=${cls}>
    <input type="radio" name=${name} value=${v} checked=${on === v} onChange=${() => set(v)} />${label}</label>`;
  return html`<form onSubmit=${submit(save)}>
    <p class="muted small">${T('change_hint')}</p>
    <${Loading} res=${plans}>
      <fieldset class="plain">
        <legend>${T('plans')}</legend>
        <div class="stack">
          ${(plans.data?.data || []).map((p) => radio('plan', p.code, plan, setPlan, html`<span><strong>${p.name}</strong> · ${T('per_month', { price: money(p.monthly_price_cents, p.currency) })}
            · ${T('per_year', { price: money(p.annual_price_cents, p.currency) })}<br />
            <span class="muted small">${p.description}</span></span>`, 'check tall plan-pick'))}
        </div>
      </fieldset>
    <//>
    <fieldset class="plain">
      <legend>${T('cycle')}</legend>
      <div class="row">${['monthly', 'annual'].map((c) => radio('cycle', c, cycle, setCycle, word('cycle', c)))}</div>
    </fieldset>
    <${ErrorNote} error=${error} />
    ${exceeded.length > 0 &&
    html`<ul class="note warn">${exceeded.map((x) => html`<li>${T('exceeded', { limit: word('limit', x.limit), used: x.used, max: x.max })}</li>`)}</ul>`}
    <${Actions} close=${onClose} id="plan-apply" busy=${busy} label=${T('apply')} />
  </form>`;
}
