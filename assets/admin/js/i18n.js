// Words, money and times in the user's language: pt-BR or en-US (the two `locale` values
// of PATCH /me). Each screen adds its own words with `define`, so screens stay apart.
// Money is integer cents in the store's currency (BRL by default); times are shown in the
// store's time zone (its organization's `timezone`), whatever the browser's zone is.

export const LOCALES = ['pt-BR', 'en-US'];

const words = { 'pt-BR': {}, 'en-US': {} };
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
export function define(dict) {
  for (const l of LOCALES) Object.assign(words[l], dict[l] || {});
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
export function t(key, vars) {
  let s = words[locale][key] ?? words['en-US'][key] ?? key;
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

/** Parses money as typed in the user's locale ("1.234,56" in pt-BR, "1,234.56" in en-US)
 * into integer cents; null when it is not an amount with at most two decimals. */
export function parseMoney(text) {
  let s = String(text).replace(/[^\d.,]/g, '');
  s = locale === 'pt-BR' ? s.replace(/\./g, '').replace(',', '.') : s.replace(/,/g, '');
  if (!/^\d+(\.\d{1,2})?$/.test(s)) return null;
  const [whole, frac = ''] = s.split('.');
  const cents = Number(whole) * 100 + Number((frac + '00').slice(0, 2));
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
  const known = words[locale][key] ?? words['en-US'][key];
  let msg = known ?? (err.message || t('error.unknown'));
  if (code === 'rate_limited' && err.details?.retry_after_seconds) {
    msg += ` ${t('error.retry_in', { s: err.details.retry_after_seconds })}`;
  }
  return msg;
}

define({
  'en-US': {
    'error.unknown': 'Something went wrong.',
    'error.retry_in': 'Try again in {s} s.',
    'error.network_error': 'Could not reach the server. Check the connection and try again.',
    'error.bad_request': 'The request was not understood.',
    'error.unauthorized': 'Your session ended. Sign in again.',
    'error.invalid_credentials': 'E-mail or password is wrong.',
    'error.account_disabled': 'This account is disabled.',
    'error.invalid_challenge': 'The sign-in step expired. Start again.',
    'error.invalid_code': 'That code is not right. Check it and try again.',
    'error.too_many_attempts': 'Too many wrong codes. Ask for a new one.',
    'error.no_pending_code': 'Ask for a code first.',
    'error.otp_delivery_failed': 'The code could not be sent. Try again or use another method.',
    'error.totp_not_enabled': 'This account has no authenticator app.',
    'error.msgapp_2fa_not_enabled': 'This account has no messaging-app codes.',
    'error.invalid_refresh_token': 'Your session ended. Sign in again.',
    'error.refresh_token_reused': 'Your session was ended for safety. Sign in again.',
    'error.forbidden': 'You do not have permission to do that.',
    'error.missing_permission': 'Your role does not allow this. Ask an owner or admin.',
    'error.not_found': 'Not found: it may have been removed.',
    'error.conflict': 'That cannot be done in the current state.',
    'error.validation_failed': 'Some fields need attention.',
    'error.invalid_status_transition': 'The order cannot move to that status now.',
    'error.refund_exceeds_refundable': 'The amount is more than what can still be refunded.',
    'error.no_refundable_payment': 'This order has no payment that can be refunded.',
    'error.insufficient_stock': 'Not enough stock.',
    'error.idempotency_request_in_progress': 'The same request is still running. Wait a moment.',
    'error.idempotency_key_reused': 'This form was already sent with other values. Reopen it.',
    'error.rate_limited': 'Too many requests.',
    'error.payload_too_large': 'That is too large.',
    'error.plan_limit_reached': 'Your plan’s limit was reached. Upgrade the plan to add more.',
    'error.subscription_inactive': 'The subscription is not active. Settle billing first.',
    'error.email_taken': 'That e-mail is already in use.',
    'error.slug_taken': 'That address is already in use.',
    'error.not_token_owner': 'Only the person who created this token can rotate it.',
    'error.empty_message': 'Write a message first.',
    'error.message_too_long': 'The message is too long.',
    'error.msgapp_window_closed': 'The 24-hour reply window closed. Send an approved template instead.',
    'error.msgapp_send_failed': 'The messaging app did not accept the message.',
    'error.email_send_failed': 'The e-mail could not be sent.',
    'error.internal_error': 'The server failed. Try again; nothing was charged twice.',
    'error.usage_exceeds_plan': 'Your usage does not fit that plan.',
    'error.incorrect_password': 'The current password is wrong.',
  },
  'pt-BR': {
    'error.unknown': 'Algo deu errado.',
    'error.retry_in': 'Tente de novo em {s} s.',
    'error.network_error': 'Sem conexão com o servidor. Verifique a rede e tente de novo.',
    'error.bad_request': 'O pedido não foi entendido.',
    'error.unauthorized': 'Sua sessão terminou. Entre de novo.',
    'error.invalid_credentials': 'E-mail ou senha incorretos.',
    'error.account_disabled': 'Esta conta está desativada.',
    'error.invalid_challenge': 'A etapa de entrada expirou. Comece de novo.',
    'error.invalid_code': 'Código incorreto. Confira e tente de novo.',
    'error.too_many_attempts': 'Códigos errados demais. Peça um novo.',
    'error.no_pending_code': 'Peça um código primeiro.',
    'error.otp_delivery_failed': 'Não foi possível enviar o código. Tente de novo ou use outro método.',
    'error.totp_not_enabled': 'Esta conta não tem aplicativo autenticador.',
    'error.msgapp_2fa_not_enabled': 'Esta conta não recebe códigos pelo aplicativo de mensagens.',
    'error.invalid_refresh_token': 'Sua sessão terminou. Entre de novo.',
    'error.refresh_token_reused': 'Sua sessão foi encerrada por segurança. Entre de novo.',
    'error.forbidden': 'Você não tem permissão para isso.',
    'error.missing_permission': 'Seu papel não permite isso. Peça a um dono ou administrador.',
    'error.not_found': 'Não encontrado: pode ter sido removido.',
    'error.conflict': 'Isso não pode ser feito no estado atual.',
    'error.validation_failed': 'Alguns campos precisam de atenção.',
    'error.invalid_status_transition': 'O pedido não pode ir para esse status agora.',
    'error.refund_exceeds_refundable': 'O valor é maior do que ainda pode ser reembolsado.',
    'error.no_refundable_payment': 'Este pedido não tem pagamento reembolsável.',
    'error.insufficient_stock': 'Estoque insuficiente.',
    'error.idempotency_request_in_progress': 'O mesmo pedido ainda está em andamento. Aguarde.',
    'error.idempotency_key_reused': 'Este formulário já foi enviado com outros valores. Abra-o de novo.',
    'error.rate_limited': 'Pedidos demais.',
    'error.payload_too_large': 'Grande demais.',
    'error.plan_limit_reached': 'O limite do seu plano foi atingido. Mude de plano para adicionar mais.',
    'error.subscription_inactive': 'A assinatura não está ativa. Regularize o pagamento primeiro.',
    'error.email_taken': 'Esse e-mail já está em uso.',
    'error.slug_taken': 'Esse endereço já está em uso.',
    'error.not_token_owner': 'Só quem criou este token pode trocá-lo.',
    'error.empty_message': 'Escreva uma mensagem primeiro.',
    'error.message_too_long': 'A mensagem é longa demais.',
    'error.msgapp_window_closed': 'A janela de 24 horas para responder fechou. Envie um modelo aprovado.',
    'error.msgapp_send_failed': 'O aplicativo de mensagens não aceitou a mensagem.',
    'error.email_send_failed': 'Não foi possível enviar o e-mail.',
    'error.internal_error': 'O servidor falhou. Tente de novo; nada foi cobrado duas vezes.',
    'error.usage_exceeds_plan': 'Seu uso não cabe nesse plano.',
    'error.incorrect_password': 'A senha atual está incorreta.',
  },
});
