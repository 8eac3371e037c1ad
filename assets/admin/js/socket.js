// The team's socket (spec 6.2, 6.4): a new ticket each attempt (browsers set no socket
// headers); a close before `hello` is a refusal: refresh once, retry once, then stop.

import { api } from './api.js';

/** `on`: onEvent(frame), onStatus('connecting' | 'live' | 'reconnecting' | 'stopped'),
 * onHello(), onCatchUp() after a reconnect (events are not replayed) or a resync. */
export class AgentSocket {
  constructor(storeId, on) {
    Object.assign(this, { storeId, on, status: 'connecting', attempt: 0, refused: 0, gen: 0, timers: {} });
    this.onOnline = () => this.status === 'reconnecting' && this.timers.retry && this.retry(true);
  }

  start() {
    addEventListener('online', this.onOnline);
    this.connect();
  }

  stop() {
    this.closed = true;
    removeEventListener('online', this.onOnline);
    this.drop();
  }

  // After a stop, or to skip a backoff wait (`keep`).
  retry(keep) {
    if (!keep) this.refused = this.attempt = 0;
    this.drop();
    this.connect();
  }

  send(frame) {
    if (this.status === 'live' && this.ws?.readyState === 1) this.ws.send(JSON.stringify(frame));
  }

  set(s) {
    if (this.status !== s) this.on.onStatus((this.status = s));
  }

  drop() {
    Object.values(this.timers).forEach(clearTimeout);
    this.timers = {};
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onmessage = ws.onclose = null;
      ws.close();
    }
  }

  async connect() {
    // Only the newest attempt goes on (a retry may start while another awaits its ticket).
    const gen = ++this.gen;
    const stale = () => this.closed || gen !== this.gen;
    if (stale()) return;
    this.set(this.everLive || this.attempt ? 'reconnecting' : 'connecting');
    let ws, hello;
    try {
      const { ticket } = await api.post(`/stores/${this.storeId}/conversations/ws-ticket`);
      if (stale()) return;
      const url = `${location.protocol.replace('http', 'ws')}//${location.host}/v1/ws/conversations`;
      ws = this.ws = new WebSocket(`${url}?ticket=${encodeURIComponent(ticket)}`);
    } catch (e) {
      if (stale()) return;
      // No permission or no session: retrying will not help.
      return e.status === 401 || e.status === 403 ? this.set('stopped') : this.later();
    }
    ws.onmessage = (ev) => {
      let f;
      try {
        f = JSON.parse(ev.data);
      } catch {
        return;
      }
      const type = f?.type;
      if (type === 'hello') {
        hello = true;
        this.openedAt = Date.now();
        this.refused = 0;
        const again = this.everLive;
        this.everLive = true;
        this.set('live');
        // No pong within 10 s: dead, even if the browser has not noticed.
        this.timers.ping = setInterval(() => {
          ws.send('{"type":"ping"}');
          this.timers.pong ||= setTimeout(() => {
            this.drop();
            this.later(true);
          }, 10_000);
        }, 25_000);
        this.on.onHello();
        if (again) this.on.onCatchUp();
      } else if (type === 'pong') this.timers.pong = clearTimeout(this.timers.pong);
      else if (type === 'resync') this.on.onCatchUp();
      else if (typeof type === 'string') this.on.onEvent(f);
    };
    ws.onclose = () => {
      this.drop();
      if (hello) this.later(true);
      else this.refusedHandshake();
    };
  }

  async refusedHandshake() {
    if (++this.refused > 1) return this.set('stopped');
    this.set('reconnecting');
    try {
      // A normal call refreshes the session; its failure says the session ended.
      await api.get('/me');
    } catch (e) {
      if (e.status === 401 || e.status === 403) return this.set('stopped');
    }
    this.connect();
  }

  // Backoff 1, 2, 4 … 30 s plus up to 30 % jitter; `lost` (a live connection ended): from 1 s
  // again if it had lasted 30 s.
  later(lost) {
    if (lost && Date.now() - this.openedAt >= 30_000) this.attempt = 0;
    this.set('reconnecting');
    const wait = Math.min(30_000, 1000 * 2 ** this.attempt++);
    this.timers.retry = setTimeout(() => {
      delete this.timers.retry;
      this.connect();
    }, wait * (1 + Math.random() * 0.3));
  }
}
