// Store: name, domain, payment methods; shipping zones; the organization's name, time zone
// and language (owners only: anyone else sees the API's refusal).

import { html, useState } from '../../lib.js';
import { api } from '../../api.js';
import { parseMoney, moneyInput, setStoreFormat, LOCALES } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { useResource, Loading } from '../../ui.js';
import { words, word, Head, Input, Select, SaveForm, Picks, Btn } from './common.js';

const T = words('store', `
name|Store name|Nome da loja
domain|Custom domain|Domínio próprio
domain_hint|Only the host name. Empty removes it.|Só o endereço. Vazio remove.
payments|Payment methods accepted|Meios de pagamento aceitos
pm.pix|Pix
pm.credit_card|Credit card|Cartão de crédito
pm.boleto|Boleto
pm.bank_transfer|Bank transfer|Transferência bancária
pm.cash_on_delivery|Cash on delivery|Pagamento na entrega
zones.title|Shipping zones|Zonas de frete
zones.none|No shipping zone yet.|Nenhuma zona de frete ainda.
zones.name|Zone name|Nome da zona
zones.price|Shipping price|Valor do frete
zones.free|Free shipping over (optional)|Frete grátis acima de (opcional)
zones.states|States|Estados
zones.add|Add zone|Adicionar zona
zones.remove|Remove zone|Remover zona
zones.bad_money|Type an amount such as {example}.|Digite um valor como {example}.
zones.need_name|Give the zone a name.|Dê um nome à zona.
zones.need_state|Pick at least one state.|Escolha ao menos um estado.
zones.dup_state|{uf} is also in another zone.|{uf} também está em outra zona.
org.title|Organization (owners only)|Organização (só donos)
org.name|Organization name|Nome da organização
org.zone|Time zone|Fuso horário`);

const METHODS = ['pix', 'credit_card', 'boleto', 'bank_transfer', 'cash_on_delivery'];
const UFS = 'AC AL AP AM BA CE DF ES GO MA MT MS MG PA PB PR PE PI RJ RN RS RO RR SC SP SE TO'.split(' ');

export function StoreSettings() {
  const { store } = useCtx();
  const res = useResource(() => api.get(`/stores/${store.id}`), [store.id]);
  const org = useResource(() => api.get(`/tenants/${store.tenant_id}`), [store.tenant_id]);
  return html`<section>
    <${Head} title=${T('nav.store')} />
    <${Loading} res=${res}>
      ${res.data && html`<${StoreForm} s=${res.data} onSaved=${res.setData} /><${Zones} s=${res.data} onSaved=${res.setData} />`}
    <//>
    <div class="card">
      <h2>${T('org.title')}</h2>
      <${Loading} res=${org}>${org.data && html`<${OrgForm} tn=${org.data} onSaved=${org.setData} />`}<//>
    </div>
  </section>`;
}

function StoreForm({ s, onSaved }) {
  const [name, setName] = useState(s.name);
  const [domain, setDomain] = useState(s.custom_domain || '');
  const [methods, setMethods] = useState(s.payment_methods);
  const run = async () =>
    onSaved(await api.patch(`/stores/${s.id}`, { name: name.trim(), custom_domain: domain.trim().toLowerCase() || null, payment_methods: methods }));
  return html`<${SaveForm} id="store-form" btn="store-save" run=${run}>
    <div class="grid-even">
      <${Input} id="store-name" label=${T('name')} value=${name} set=${setName} required maxlength="120" />
      <${Input} id="store-domain" label=${T('domain')} hint=${T('domain_hint')} value=${domain} set=${setDomain}
        inputmode="url" autocapitalize="off" spellcheck="false" maxlength="253" placeholder="loja.exemplo.com.br" />
    </div>
    <fieldset class="plain">
      <legend>${T('payments')}</legend>
      <div class="checks"><${Picks} items=${METHODS} picked=${methods} set=${setMethods} name="payment_method" label=${(m) => word('pm', m)} /></div>
    </fieldset>
  <//>`;
}

const zoneIn = (z) => ({
  name: z.name,
  price: moneyInput(z.price_cents),
  free: z.free_over_cents == null ? '' : moneyInput(z.free_over_cents),
  regions: z.regions,
});

function Zones({ s, onSaved }) {
  const [zones, setZones] = useState(() => s.shipping_zones.map(zoneIn));
  const [problems, setProblems] = useState({});
  const set = (i, fn) => setZones((zs) => zs.map((z, j) => (j === i ? { ...z, ...fn(z) } : z)));
  // Checked here first: names, amounts typed in the user's locale, each state in one zone.
  const run = async () => {
    const bad = {};
    const seen = {};
    const money = (text, example, required) => {
      const cents = text.trim() ? parseMoney(text) : null;
      return [cents, (required || text.trim()) && cents === null && T('zones.bad_money', { example: moneyInput(example) })];
    };
    const body = zones.map((z, i) => {
      const [price, badPrice] = money(z.price, 1990, true);
      const [free, badFree] = money(z.free, 19900);
      const dup = z.regions.find((uf) => seen[uf]);
      z.regions.forEach((uf) => (seen[uf] = 1));
      const p = {
        name: !z.name.trim() && T('zones.need_name'),
        price: badPrice,
        free: badFree,
        regions: dup ? T('zones.dup_state', { uf: dup }) : !z.regions.length && T('zones.need_state'),
      };
      if (Object.values(p).some(Boolean)) bad[i] = p;
      return { name: z.name.trim(), price_cents: price, free_over_cents: free, regions: z.regions };
    });
    setProblems(bad);
    if (Object.keys(bad).length) return false;
    const next = await api.patch(`/stores/${s.id}`, { shipping_zones: body });
    onSaved(next);
    setZones(next.shipping_zones.map(zoneIn));
  };
  return html`<${SaveForm} id="zones-form" btn="zones-save" title=${T('zones.title')} run=${run}>
    ${zones.length === 0 && html`<p class="muted">${T('zones.none')}</p>`}
    ${zones.map((z, i) => {
      const p = problems[i] || {};
      const field = (k, extra) => html`<${Input} id=${`zone-${i}-${k}`} label=${T(`zones.${k}`)} value=${z[k]} error=${p[k]}
        set=${(v) => set(i, () => ({ [k]: v }))} ...${extra} />`;
      return html`<fieldset class="zone" key=${i}>
        <legend>${z.name || '…'}</legend>
        <div class="grid-even">${field('name', { maxlength: 80 })}${field('price', { inputmode: 'decimal' })}${field('free', { inputmode: 'decimal' })}</div>
        <fieldset class="plain">
          <legend>${T('zones.states')}</legend>
          <div class="uf-grid"><${Picks} items=${UFS} picked=${z.regions} label=${(uf) => uf} set=${(fn) => set(i, (c) => ({ regions: fn(c.regions) }))} /></div>
          ${p.regions && html`<p class="field-error">${p.regions}</p>`}
        </fieldset>
        <${Btn} cls="ghost" aria-label=${`${T('zones.remove')}: ${z.name}`} onClick=${() => setZones((zs) => zs.filter((_, j) => j !== i))}>${T('zones.remove')}<//>
      </fieldset>`;
    })}
    <p><${Btn} id="zone-add" onClick=${() => setZones((zs) => [...zs, { name: '', price: '', free: '', regions: [] }])}>+ ${T('zones.add')}<//></p>
  <//>`;
}

function OrgForm({ tn, onSaved }) {
  const [name, setName] = useState(tn.name);
  const [zone, setZone] = useState(tn.timezone);
  const [locale, setLocale] = useState(tn.locale);
  const run = async () => {
    const next = await api.patch(`/tenants/${tn.id}`, { name: name.trim(), timezone: zone, locale });
    setStoreFormat(next);
    onSaved(next);
  };
  // An older browser offers only the current zone.
  let zones = Intl.supportedValuesOf?.('timeZone') || [];
  if (!zones.includes(zone)) zones = [zone, ...zones];
  return html`<${SaveForm} id="org-form" btn="org-save" card=${false} run=${run}>
    <div class="grid-even">
      <${Input} id="org-name" label=${T('org.name')} value=${name} set=${setName} required maxlength="120" />
      <${Select} id="org-zone" label=${T('org.zone')} value=${zone} set=${setZone} options=${zones.map((z) => [z, z.replace(/_/g, ' ')])} />
      <${Select} id="org-locale" label=${T('c.language')} value=${locale} set=${setLocale} options=${LOCALES.map((l) => [l, word('locale', l)])} />
    </div>
  <//>`;
}
