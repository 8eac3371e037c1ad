// The one client of /v1. Rule 6: access token in memory, newest refresh token in memory and
// sessionStorage; one refresh in flight (two with one token look like theft).

const BASE = '/v1';
const REFRESH_KEY = 'ma.refresh_token';
const SESSION_KEY = 'ma.session_id';
// Refresh this long before the access token expires, so a request never races its expiry.
const EARLY_MS = 30_000;

let access = null;
let accessExpiresAt = 0;
let refreshToken = sessionStorage.getItem(REFRESH_KEY);
let inFlight = null;
let user = null;
// Bumped on every sign-out: a refresh answered after it must not sign the tab back in.
let generation = 0;
let sessionId = sessionStorage.getItem(SESSION_KEY);
const listeners = new Set();

// A duplicated tab copies sessionStorage, so two tabs would spend one refresh token: a tab
// asks the others first (BroadcastChannel), and if its session is held, signs in anew.
const tabId = Math.random().toString(36).slice(2);
let holding = false;
let heldElsewhere = false;
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('ma.sessions') : null;
if (channel) {
  channel.onmessage = ({ data: m }) => {
    if (m?.type === 'who' && holding && m.session_id === sessionId && m.tab !== tabId) {
      channel.postMessage({ type: 'held', to: m.tab });
    } else if (m?.type === 'held' && m.to === tabId) {
      heldElsewhere = true;
    } else if (m?.type === 'rotated' && m.tab !== tabId && sessionId && m.session_id === sessionId) {
      // Another tab refreshed this session (one that missed the question at start): this
      // tab's token is spent, so it drops its copy rather than present it again.
      forget();
    }
  };
}

async function heldByAnotherTab() {
  if (!channel || !sessionId) return false;
  heldElsewhere = false;
  channel.postMessage({ type: 'who', session_id: sessionId, tab: tabId });
  await new Promise((r) => setTimeout(r, 150));
  return heldElsewhere;
}

/** An API failure: the error body's code, message and details, with the HTTP status. */
export class ApiError extends Error {
  constructor(status, body, traceId) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || (status === 0 ? 'network_error' : `http_${status}`);
    this.details = (body && body.details) || null;
    this.traceId = traceId || null;
  }
}

/** Called with the user (or null when signed out) whenever the session changes. */
export function onSession(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function notify() {
  for (const fn of listeners) fn(user);
}

export function currentUser() {
  return user;
}

export function hasStoredSession() {
  return Boolean(refreshToken);
}

/** Adopts a session response (login, verify, refresh): 2.4's fields. */
export function adopt(session) {
  access = session.token;
  accessExpiresAt = Date.now() + session.expires_in * 1000;
  refreshToken = session.refresh_token;
  sessionId = session.session_id;
  holding = true;
  sessionStorage.setItem(REFRESH_KEY, refreshToken);
  sessionStorage.setItem(SESSION_KEY, sessionId);
  user = session.user || user;
  notify();
}

function forget() {
  generation += 1;
  access = null;
  accessExpiresAt = 0;
  refreshToken = null;
  sessionId = null;
  holding = false;
  user = null;
  sessionStorage.removeItem(REFRESH_KEY);
  sessionStorage.removeItem(SESSION_KEY);
  notify();
}

async function send(method, path, { body, token, headers = {}, form } = {}) {
  const h = { Accept: 'application/json', ...headers };
  let payload;
  if (form) {
    payload = form;
  } else if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  if (token) h.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(BASE + path, { method, headers: h, body: payload, cache: 'no-store' });
  } catch {
    throw new ApiError(0, { error: 'network error', code: 'network_error' });
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) throw new ApiError(res.status, data, res.headers.get('x-trace-id'));
  return data;
}

/** One refresh at a time; callers that arrive meanwhile share its outcome. */
export function refresh() {
  if (!inFlight) {
    inFlight = (async () => {
      const token = refreshToken;
      const gen = generation;
      if (!token) throw new ApiError(401, { error: 'signed out', code: 'unauthorized' });
      // A lost answer leaves the token spent on the server: it honours the same token again
      // for 30 s, so a network failure is retried with it at once, then after 2 and 6 s.
      for (let attempt = 0; ; attempt++) {
        try {
          const session = await send('POST', '/auth/refresh', { body: { refresh_token: token } });
          if (gen !== generation) return;
          adopt(session);
          channel?.postMessage({ type: 'rotated', session_id: sessionId, tab: tabId });
          return;
        } catch (e) {
          if (e.status === 401 && gen === generation) forget();
          if (e.status !== 0 || attempt === 3) throw e;
          await new Promise((r) => setTimeout(r, [0, 2000, 4000][attempt]));
        }
      }
    })().finally(() => {
      inFlight = null;
    });
  }
  return inFlight;
}

async function validAccess() {
  if (inFlight) await inFlight;
  if (!access || Date.now() > accessExpiresAt - EARLY_MS) await refresh();
  return access;
}

/** An authenticated call; on 401 `unauthorized` it refreshes once and tries again. */
export async function call(method, path, opts = {}) {
  const token = await validAccess();
  try {
    return await send(method, path, { ...opts, token });
  } catch (e) {
    if (e.status === 401 && e.code === 'unauthorized' && refreshToken) {
      await refresh();
      return send(method, path, { ...opts, token: access });
    }
    throw e;
  }
}

/** A POST answered with server-sent events (the assistant's turns): `onEvent(name, data)`
 * for each, in order, until the stream ends; a refusal throws as any call does. */
export async function stream(path, body, onEvent) {
  const go = async () =>
    fetch(BASE + path, {
      method: 'POST',
      headers: {
        Accept: 'text/event-stream',
        Authorization: `Bearer ${await validAccess()}`,
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
  let res = await go().catch(() => null);
  if (res?.status === 401 && refreshToken) {
    await refresh();
    res = await go().catch(() => null);
  }
  if (!res) throw new ApiError(0, null);
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null), res.headers.get('x-trace-id'));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      // Any line ending (CRLF, CR, LF); a CR ending a chunk may be half a CRLF: held back.
      buf += value;
      const held = buf.endsWith('\r') ? '\r' : '';
      buf = buf.slice(0, buf.length - held.length).replace(/\r\n?/g, '\n');
      for (let i; (i = buf.indexOf('\n\n')) >= 0; buf = buf.slice(i + 2)) {
        const lines = buf.slice(0, i).split('\n');
        const name = (lines.findLast((l) => l.startsWith('event:')) || 'event:message').slice(6).trim();
        const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        let parsed;
        try {
          parsed = JSON.parse(data);
        } catch {
          continue; // not ours to read: skip it
        }
        onEvent(name, parsed);
      }
      buf += held;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A query string from an object, leaving out empty values. */
export function qs(params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const api = {
  get: (path, params) => call('GET', path + qs(params)),
  post: (path, body, { idempotencyKey } = {}) =>
    call('POST', path, {
      body,
      headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
    }),
  postForm: (path, form) => call('POST', path, { form }),
  put: (path, body) => call('PUT', path, { body }),
  patch: (path, body) => call('PATCH', path, { body }),
  del: (path) => call('DELETE', path),
  /** A binary resource (attachment, QR code) as an object URL, with the Authorization header. */
  async blobUrl(path) {
    const get = async () => fetch(BASE + path, { headers: { Authorization: `Bearer ${await validAccess()}` } });
    let res = await get();
    if (res.status === 401 && refreshToken) {
      await refresh();
      res = await get();
    }
    if (!res.ok) throw new ApiError(res.status, null);
    return URL.createObjectURL(await res.blob());
  },
};

// Sign-in: public operations, no token.
export const auth = {
  login: (email, password) =>
    send('POST', '/auth/login', {
      body: { email, password, device_name: deviceName() },
    }),
  totp: (challenge, code) =>
    send('POST', '/auth/2fa/totp/verify', { body: { challenge, totp_code: code } }),
  sendOtp: (challenge) => send('POST', '/auth/otp/send', { body: { challenge } }),
  otp: (challenge, code) => send('POST', '/auth/otp/verify', { body: { challenge, code } }),
  recovery: (challenge, code) =>
    send('POST', '/auth/2fa/recovery/verify', { body: { challenge, recovery_code: code } }),
  /** Resumes the tab's session from its stored refresh token; false when there is none. */
  async resume() {
    if (!refreshToken) return false;
    if (await heldByAnotherTab()) {
      // Only this tab's copy goes; the other tab keeps the session.
      forget();
      return false;
    }
    try {
      await refresh();
      return true;
    } catch (e) {
      if (e.status === 401) return false;
      throw e;
    }
  },
  async logout() {
    // A refresh under way would hand out the token after this one: wait for it first.
    await inFlight?.catch(() => {});
    const token = refreshToken;
    forget();
    if (token) {
      try {
        await send('POST', '/auth/logout', { body: { refresh_token: token } });
      } catch {
        // Signed out here either way; the server forgets the session when it expires.
      }
    }
  },
  /** Sets the user record after PATCH /me. */
  setUser(u) {
    user = u;
    notify();
  },
};

function deviceName() {
  const ua = navigator.userAgent;
  const pick = (pairs) => (pairs.find(([re]) => re.test(ua)) || [])[1];
  const browser = pick([[/Firefox\//, 'Firefox'], [/Edg\//, 'Edge'], [/Chrome\//, 'Chrome'], [/Safari\//, 'Safari']]);
  const os = pick([[/Android/, 'Android'], [/iPhone|iPad/, 'iOS'], [/Mac OS X/, 'macOS'], [/Windows/, 'Windows'], [/Linux/, 'Linux']]);
  return `${browser || 'Browser'}${os ? ` on ${os}` : ''} (admin app)`;
}

/** A fresh idempotency key, made once per intended write (a dialog), reused on retry. */
export function newIdempotencyKey() {
  // crypto.randomUUID needs a secure context; a VPS reached over plain http is not one.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
