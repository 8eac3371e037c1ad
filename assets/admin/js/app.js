// The app's frame: the session (sign-in until there is one), the store being worked on,
// the hash router (#/orders/<id>), the navigation and the screens.

import { html, useState, useEffect, createContext, useContext } from './lib.js';
import { api, auth, onSession, currentUser, hasStoredSession } from './api.js';
import { t, words, setLocale, onLocale, setStoreFormat, getLocale, LOCALES } from './i18n.js';
import { ErrorNote } from './ui.js';
import { SignIn } from './screens/signin.js';

words('nav', `
home|Home|Início
orders|Orders|Pedidos
products|Products|Produtos
customers|Customers|Clientes
reviews|Reviews|Avaliações
inbox|Inbox|Atendimento
settings|Settings|Configurações
main|Main|Principal
skip|Skip to content|Pular para o conteúdo
`);
words('app', `
store|Store|Loja
sign_out|Sign out|Sair
language|Language|Idioma
no_store|Your account is not a member of any store yet. Ask an owner for an invite, or create a store with the API.|Sua conta ainda não participa de nenhuma loja. Peça um convite a um dono ou crie uma loja pela API.
not_found|This page does not exist.|Esta página não existe.
`);

/** What every screen needs: the user, the store and its organization. */
export const Ctx = createContext(null);
export const useCtx = () => useContext(Ctx);

const STORE_KEY = 'ma.store_id';

/** The current route from the hash: `#/orders/abc?status=paid`. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  let parts;
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = ['?'];
  }
  // Route parts end up in API paths: only ids and words, never "..", "/" or "%".
  if (!parts.every((p) => /^[\w-]+$/.test(p))) parts = ['?'];
  return { parts, query: new URLSearchParams(query) };
}

export function navigate(to) {
  location.hash = to.startsWith('#') ? to : `#${to}`;
}

/** A hash link's href from a path and optional query object. */
export function href(path, query) {
  const q = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v)).toString() : '';
  return `#${path}${q ? `?${q}` : ''}`;
}

function useRoute() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function App() {
  const [user, setUser] = useState(currentUser());
  const [booting, setBooting] = useState(hasStoredSession());
  const [, setLang] = useState(getLocale());
  useEffect(() => onSession(setUser), []);
  useEffect(() => onLocale(setLang), []);
  useEffect(() => {
    if (user?.locale) setLocale(user.locale);
  }, [user?.locale]);
  const [bootError, setBootError] = useState(null);
  // Resuming the tab's session; a network failure offers a retry rather than a new sign-in.
  const boot = () => {
    setBootError(null);
    auth.resume().then(() => setBooting(false), setBootError);
  };
  useEffect(() => {
    if (booting) boot();
  }, []);
  if (bootError) return html`<main class="center" id="main"><${ErrorNote} error=${bootError} onRetry=${boot} /></main>`;
  if (booting) return html`<p class="boot" role="status">merchant-admin…</p>`;
  if (!user) return html`<${SignIn} />`;
  return html`<${Workspace} user=${user} />`;
}

/** Signed in: loads the stores, picks one, and shows the shell. */
function Workspace({ user }) {
  const [state, setState] = useState({ stores: null, error: null });
  const [storeId, setStoreId] = useState(sessionStorage.getItem(STORE_KEY));
  const [tenant, setTenant] = useState(null);
  const load = () =>
    api.get('/stores', { limit: 200 }).then(
      (p) => setState({ stores: p.data, error: null }),
      (error) => setState({ stores: null, error }),
    );
  useEffect(() => {
    load();
  }, []);
  const stores = state.stores;
  const store = stores && (stores.find((s) => s.id === storeId) || stores[0]);
  useEffect(() => {
    if (!store) return;
    sessionStorage.setItem(STORE_KEY, store.id);
    api.get(`/tenants/${store.tenant_id}`).then(
      (tn) => {
        setStoreFormat(tn);
        setTenant(tn);
      },
      () => setTenant({ id: store.tenant_id }),
    );
  }, [store?.id]);
  if (state.error) return html`<main class="center"><${ErrorNote} error=${state.error} onRetry=${load} /></main>`;
  if (!stores || (store && !tenant)) return html`<p class="boot" role="status">${t('ui.loading')}</p>`;
  if (!store) {
    return html`<main class="center"><div class="card narrow"><p>${t('app.no_store')}</p>
      <button class="btn" onClick=${() => auth.logout()}>${t('app.sign_out')}</button></div></main>`;
  }
  const ctx = { user, store, tenant, stores, setStoreId };
  return html`<${Ctx.Provider} value=${ctx}><${Shell} /><//>`;
}

const NAV = [
  ['home', '/'],
  ['orders', '/orders'],
  ['products', '/products'],
  ['customers', '/customers'],
  ['reviews', '/reviews'],
  ['inbox', '/inbox'],
  ['settings', '/settings'],
];

// Screens load when first opened: the sign-in page needs none of them, and a screen's
// module is fetched once per page load.
const SCREENS = {
  '': () => import('./screens/home.js').then((m) => m.Home),
  orders: () => import('./screens/orders.js').then((m) => m.Orders),
  products: () => import('./screens/products.js').then((m) => m.Products),
  customers: () => import('./screens/customers.js').then((m) => m.Customers),
  reviews: () => import('./screens/reviews.js').then((m) => m.Reviews),
  inbox: () => import('./screens/inbox.js').then((m) => m.Inbox),
  settings: () => import('./screens/settings.js').then((m) => m.Settings),
};
const loaded = {};

/** The screen for `section`, once its module has loaded. */
function useScreen(section) {
  const [, setTick] = useState(0);
  const [error, setError] = useState(null);
  const load = SCREENS[section];
  useEffect(() => {
    if (!load || loaded[section]) return;
    setError(null);
    load().then(
      (Screen) => {
        loaded[section] = Screen;
        setTick((n) => n + 1);
      },
      (e) => setError(e),
    );
  }, [section]);
  return { Screen: loaded[section], missing: !load, error };
}

function Shell() {
  const { user, store, stores, setStoreId } = useCtx();
  const route = useRoute();
  const section = route.parts[0] || '';
  const { Screen, missing, error } = useScreen(section);
  // Move focus to the page heading on navigation, so screen readers announce the new page.
  useEffect(() => {
    const h = document.querySelector('main h1');
    if (h) h.focus({ preventScroll: false });
  }, [Screen, route.parts[1]]);
  return html`<div class="shell">
    <a class="skip" href="#main" onClick=${(e) => {
      e.preventDefault();
      document.getElementById('main')?.focus();
    }}>${t('nav.skip')}</a>
    <header class="top">
      <a class="brand" href="#/"><img src="/admin/icon.svg" alt="" width="28" height="28" /><span>${store.name}</span></a>
      <nav class="nav" aria-label=${t('nav.main')}>
        <ul>
          ${NAV.map(
            ([key, path]) => html`<li><a href=${`#${path}`} aria-current=${(path === '/' ? section === '' : section === path.slice(1)) ? 'page' : undefined}>${t(`nav.${key}`)}</a></li>`,
          )}
        </ul>
      </nav>
      <div class="top-tools">
        ${stores.length > 1 &&
        html`<label class="sr-only" for="store-pick">${t('app.store')}</label>
          <select id="store-pick" value=${store.id} onChange=${(e) => {
            setStoreId(e.target.value);
            navigate('/');
          }}>
            ${stores.map((s) => html`<option value=${s.id}>${s.name}</option>`)}
          </select>`}
        <${LanguagePick} />
        <span class="muted small user-email">${user.email}</span>
        <button type="button" class="btn ghost" onClick=${() => auth.logout()}>${t('app.sign_out')}</button>
      </div>
    </header>
    <main id="main" tabindex="-1">
      ${missing
        ? html`<h1 tabindex="-1">${t('app.not_found')}</h1>`
        : error
          ? html`<${ErrorNote} error=${{ code: 'network_error', message: String(error) }} onRetry=${() => location.reload()} />`
          : Screen
            ? html`<${Screen} key=${store.id} parts=${route.parts.slice(1)} query=${route.query} />`
            : html`<p class="muted" role="status">${t('ui.loading')}</p>`}
    </main>
  </div>`;
}

/** The language picker: saves the choice on the user (PATCH /me), so every device follows. */
function LanguagePick() {
  const [error, setError] = useState(null);
  const change = async (e) => {
    const locale = e.target.value;
    setLocale(locale);
    try {
      auth.setUser(await api.patch('/me', { locale }));
    } catch (err) {
      setError(err);
    }
  };
  return html`<label class="sr-only" for="lang-pick">${t('app.language')}</label>
    <select id="lang-pick" value=${getLocale()} onChange=${change} title=${error ? error.message : ''}>
      ${LOCALES.map((l) => html`<option value=${l}>${l === 'pt-BR' ? 'Português' : 'English'}</option>`)}
    </select>`;
}
