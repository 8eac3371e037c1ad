// Words (pt-BR, en-US: PATCH /me's locales; each screen adds its own), money from integer
// cents in the store's currency, times in the store's time zone whatever the browser's.

export const LOCALES = ['pt-BR', 'en-US'];

const dict = { 'pt-BR': {}, 'en-US': {} };
let locale = guess();
let zone = 'America/Sao_Paulo';
let currency = 'BRL';
const listeners = new Set();

function guess() {
  const langs = navigator.languages || [navigator.language || ''];
  return langs.some((l) => /^pt\b/i.test(l)) || !langs.some((l) => /^en\b/i.test(l))
    ? 'pt-BR'
    : 'en-US';
}

/** Adds words: `{ 'pt-BR': { key: 'texto' }, 'en-US': { key: 'text' } }`. */
export function define(add) {
  for (const l of LOCALES) Object.assign(dict[l], add[l] || {});
}

/** Defines words one a line, `key|en-US|pt-BR` (no pt-BR: the same text), each key under
 * `prefix.` (none when prefix is empty; `error.` codes keep theirs); returns `t` for them. */
export function words(prefix, text) {
  const full = (k) => (!prefix || k.startsWith('error.') ? k : `${prefix}.${k}`);
  const d = { 'en-US': {}, 'pt-BR': {} };
  for (const l of text.trim().split('\n')) {
    const [k, en, pt = en] = l.split('|');
    d['en-US'][full(k)] = en;
    d['pt-BR'][full(k)] = pt;
  }
  define(d);
  return (k, v) => t(full(k), v);
}

export function getLocale() {
  return locale;
}

export function setLocale(l) {
  if (!LOCALES.includes(l) || l === locale) return;
  locale = l;
  document.documentElement.lang = l;
  for (const fn of listeners) fn(l);
}

export function onLocale(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The store's zone and currency, once its organization is known. */
export function setStoreFormat({ timezone, currency: c }) {
  if (timezone) zone = timezone;
  if (c) currency = c;
}

export function getZone() {
  return zone;
}

/** The word for `key`, with `{name}` placeholders filled from `vars`. */
/** Words asked for but never defined: the browser tests fail on any (a screen showing a key). */
export const missing = (globalThis.__missingWords = new Set());

/** Whether `key` has a word (for enum values a screen shows raw when unknown). */
export const has = (key) => key in dict['en-US'];

export function t(key, vars) {
  if (!has(key)) missing.add(key);
  let s = dict[locale][key] ?? dict['en-US'][key] ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (_, k) => (vars[k] ?? `{${k}}`).toString());
  return s;
}

/** Integer cents as money for the locale, e.g. R$ 1.234,56 or R$1,234.56. */
export function money(cents, cur) {
  if (cents === null || cents === undefined) return '';
  return new Intl.NumberFormat(locale, { style: 'currency', currency: cur || currency }).format(
    cents / 100,
  );
}

/** Parses money as typed ("1.234,56", "1,234.56", "12,5", "12.50") into integer cents: the
 * last separator followed by one or two digits is the decimal one, whatever the locale;
 * other separators group thousands. Null when it is not such an amount. */
export function parseMoney(text) {
  const s = String(text).replace(/[^\d.,]/g, '');
  const m = /^([\d.,]*?)(?:[.,](\d{1,2}))?$/.exec(s);
  if (!m || !/^\d{1,3}([.,]?\d{3})*$|^\d+$/.test(m[1])) return null;
  const cents = Number(m[1].replace(/[.,]/g, '')) * 100 + Number((m[2] || '').padEnd(2, '0'));
  return Number.isSafeInteger(cents) ? cents : null;
}

/** Cents as the user would type them back (no currency sign): "12,50" or "12.50". */
export function moneyInput(cents) {
  const n = (cents / 100).toFixed(2);
  return locale === 'pt-BR' ? n.replace('.', ',') : n;
}

const formats = new Map();
function fmt(opts) {
  const key = `${locale}|${zone}|${JSON.stringify(opts)}`;
  if (!formats.has(key)) {
    formats.set(key, new Intl.DateTimeFormat(locale, { ...opts, timeZone: zone }));
  }
  return formats.get(key);
}

/** An RFC 3339 timestamp as date and time in the store's zone. */
export function dateTime(iso) {
  if (!iso) return '';
  return fmt({ dateStyle: 'short', timeStyle: 'short' }).format(new Date(iso));
}

export function date(iso) {
  if (!iso) return '';
  return fmt({ dateStyle: 'medium' }).format(new Date(iso));
}

export function time(iso) {
  if (!iso) return '';
  return fmt({ timeStyle: 'short' }).format(new Date(iso));
}

/** "3 min ago" / "há 3 min", for recent activity. */
export function ago(iso) {
  if (!iso) return '';
  const secs = (new Date(iso).getTime() - Date.now()) / 1000;
  const rtf = new Intl.RelativeTimeFormat(locale, { numeric: 'auto', style: 'short' });
  const abs = Math.abs(secs);
  if (abs < 60) return rtf.format(Math.round(secs), 'second');
  if (abs < 3600) return rtf.format(Math.round(secs / 60), 'minute');
  if (abs < 86400) return rtf.format(Math.round(secs / 3600), 'hour');
  if (abs < 86400 * 7) return rtf.format(Math.round(secs / 86400), 'day');
  return dateTime(iso);
}

/** The human message for an API error: its `code` in the user's words, else the server's. */
export function errorMessage(err) {
  if (!err) return '';
  const code = err.code || '';
  const key = `error.${code}`;
  const known = dict[locale][key] ?? dict['en-US'][key];
  let msg = known ?? (err.message || t('error.unknown'));
  if (code === 'rate_limited' && err.details?.retry_after_seconds) {
    msg += ` ${t('error.retry_in', { s: err.details.retry_after_seconds })}`;
  }
  return msg;
}

words('error', `
unknown|Something went wrong.|Algo deu errado.
retry_in|Try again in {s} s.|Tente de novo em {s} s.
network_error|Could not reach the server. Check the connection and try again.|Sem conexão com o servidor. Verifique a rede e tente de novo.
bad_request|The request was not understood.|O pedido não foi entendido.
unauthorized|Your session ended. Sign in again.|Sua sessão terminou. Entre de novo.
invalid_credentials|E-mail or password is wrong.|E-mail ou senha incorretos.
account_disabled|This account is disabled.|Esta conta está desativada.
invalid_challenge|The sign-in step expired. Start again.|A etapa de entrada expirou. Comece de novo.
invalid_code|That code is not right. Check it and try again.|Código incorreto. Confira e tente de novo.
too_many_attempts|Too many wrong codes. Ask for a new one.|Códigos errados demais. Peça um novo.
no_pending_code|Ask for a code first.|Peça um código primeiro.
otp_delivery_failed|The code could not be sent. Try again or use another method.|Não foi possível enviar o código. Tente de novo ou use outro método.
totp_not_enabled|This account has no authenticator app.|Esta conta não tem aplicativo autenticador.
msgapp_2fa_not_enabled|This account has no messaging-app codes.|Esta conta não recebe códigos pelo aplicativo de mensagens.
invalid_refresh_token|Your session ended. Sign in again.|Sua sessão terminou. Entre de novo.
refresh_token_reused|Your session was ended for safety. Sign in again.|Sua sessão foi encerrada por segurança. Entre de novo.
forbidden|You do not have permission to do that.|Você não tem permissão para isso.
missing_permission|Your role does not allow this. Ask an owner or admin.|Seu papel não permite isso. Peça a um dono ou administrador.
not_found|Not found: it may have been removed.|Não encontrado: pode ter sido removido.
conflict|That cannot be done in the current state.|Isso não pode ser feito no estado atual.
validation_failed|Some fields need attention.|Alguns campos precisam de atenção.
invalid_status_transition|The order cannot move to that status now.|O pedido não pode ir para esse status agora.
refund_exceeds_refundable|The amount is more than what can still be refunded.|O valor é maior do que ainda pode ser reembolsado.
no_refundable_payment|This order has no payment that can be refunded.|Este pedido não tem pagamento reembolsável.
insufficient_stock|Not enough stock.|Estoque insuficiente.
idempotency_request_in_progress|The same request is still running. Wait a moment.|O mesmo pedido ainda está em andamento. Aguarde.
idempotency_key_reused|This form was already sent with other values. Reopen it.|Este formulário já foi enviado com outros valores. Abra-o de novo.
rate_limited|Too many requests.|Pedidos demais.
payload_too_large|That is too large.|Grande demais.
plan_limit_reached|Your plan’s limit was reached. Upgrade the plan to add more.|O limite do seu plano foi atingido. Mude de plano para adicionar mais.
subscription_inactive|The subscription is not active. Settle billing first.|A assinatura não está ativa. Regularize o pagamento primeiro.
email_taken|That e-mail is already in use.|Esse e-mail já está em uso.
slug_taken|That address is already in use.|Esse endereço já está em uso.
not_token_owner|Only the person who created this token can rotate it.|Só quem criou este token pode trocá-lo.
empty_message|Write a message first.|Escreva uma mensagem primeiro.
message_too_long|The message is too long.|A mensagem é longa demais.
msgapp_window_closed|The 24-hour reply window closed. Send an approved template instead.|A janela de 24 horas para responder fechou. Envie um modelo aprovado.
msgapp_send_failed|The messaging app did not accept the message.|O aplicativo de mensagens não aceitou a mensagem.
email_send_failed|The e-mail could not be sent.|Não foi possível enviar o e-mail.
internal_error|The server failed. Try again; nothing was charged twice.|O servidor falhou. Tente de novo; nada foi cobrado duas vezes.
usage_exceeds_plan|Your usage does not fit that plan.|Seu uso não cabe nesse plano.
incorrect_password|The current password is wrong.|A senha atual está incorreta.
`);
