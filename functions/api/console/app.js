// The console's entry: reads /console/config.json, signs in as configured, and routes
// `#/...` to a page. Hash routing keeps every page one static file: no server routes to add.

import { h, fill, showError } from './ui.js';
import { setTenant, getTenant, setMode, setToken, hasToken, setConfig } from './api.js';
import { signIn, completeSignIn } from './auth.js';
import * as v from './views.js';
import { overviewPage } from './overview.js';

const ROUTES = [
  [/^#\/overview$/, overviewPage, 'overview'],
  [/^#\/jobs\/new$/, v.newJobPage, 'jobs'],
  [/^#\/jobs\/([^/?]+)\/edit$/, v.editJobPage, 'jobs'],
  [/^#\/jobs\/([^/?]+)$/, v.jobPage, 'jobs'],
  [/^#\/jobs$/, v.jobsPage, 'jobs'],
  [/^#\/executions\/([^/?]+)$/, v.execPage, 'jobs'],
  [/^#\/dlq$/, v.dlqPage, 'dlq'],
  [/^#\/ops$/, v.opsPage, 'ops'],
];

const main = document.getElementById('main');

async function route() {
  const hash = location.hash || '#/overview';
  const [path, qs] = hash.split('?');
  const query = new URLSearchParams(qs || '');
  for (const [re, page, nav] of ROUTES) {
    const m = re.exec(path);
    if (!m) continue;
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    const params = m.slice(1).map(decodeURIComponent);
    // Each visit renders into its own element: a slower earlier visit still finishing its
    // calls then writes into a detached node, never over the page now shown.
    const view = h('div');
    fill(main, view);
    try { await page(view, params, query); } catch (e) { showError(e, view); }
    document.title = `${main.querySelector('h1')?.textContent || 'Sundial'} · Sundial console`;
    return;
  }
  location.hash = '#/overview';
}

function tenantSwitcher() {
  const input = h('input', { id: 'tenant', value: getTenant(), autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'who', onsubmit: (e) => {
    e.preventDefault();
    setTenant(input.value.trim() || 'local');
    document.getElementById('tenant-now').textContent = getTenant();
    route();
  } },
  h('label', { for: 'tenant' }, 'Tenant'), input, h('button', { type: 'submit', class: 'ghost', id: 'switch-tenant' }, 'Switch'),
  h('span', { class: 'muted' }, 'acting as ', h('strong', { id: 'tenant-now' }, getTenant())));
  return form;
}

function theme() {
  const btn = document.getElementById('theme');
  btn.addEventListener('click', () => {
    const root = document.documentElement;
    const dark = root.dataset.theme ? root.dataset.theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    root.dataset.theme = dark ? 'light' : 'dark';
    btn.setAttribute('aria-pressed', String(!dark));
  });
}

async function start() {
  theme();
  const who = document.getElementById('who');
  let cfg = { auth: 'header' };
  try {
    const res = await fetch('/console/config.json', { credentials: 'omit' });
    cfg = await res.json();
  } catch { /* the local default */ }
  setMode(cfg.auth);
  setConfig(cfg);
  if (cfg.auth === 'header') {
    who.replaceWith(tenantSwitcher());
  } else if (cfg.auth === 'oidc') {
    try {
      const t = await completeSignIn(cfg);
      if (t) setToken(t);
    } catch (e) { showError(e, main); }
    if (!hasToken()) {
      fill(who, h('button', { type: 'button', id: 'sign-in', onclick: () => signIn(cfg).catch((e) => showError(e, main)) }, 'Sign in'));
      fill(main, h('h1', {}, 'Sign in'), h('p', {}, 'Sign in with your organisation\u2019s account to see your tenant\u2019s jobs. The token stays in this tab\u2019s memory only.'));
      return;
    }
    fill(who, h('span', { class: 'muted' }, 'signed in'));
  } else {
    fill(main, h('h1', {}, 'IAM authentication'), h('p', {}, 'This API is deployed with IAM (SigV4) auth, which a browser page cannot sign. Use the sundial CLI with --auth iam, or deploy with -c sundial:jwtIssuer=… to use the console.'));
    return;
  }
  v.setRouter(route);
  window.addEventListener('hashchange', route);
  route();
}

start();
