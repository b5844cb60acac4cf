// The console's only way to data: the public /v1 API, with the caller's credentials.
// Local run: the X-Sundial-Tenant header (the local server's own scheme). Deployed (JWT): a
// bearer token obtained by auth.js, held in this module's memory only (never in storage).

let tenant = 'local';
let token = null;

export function setTenant(t) { tenant = t; }
export function getTenant() { return tenant; }
export function setToken(t) { token = t; }
export function hasToken() { return token !== null; }

export class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.code = err.code;
    this.field = err.field;
  }
}

let mode = 'header';
export function setMode(m) { mode = m; }

let config = {};
/** /console/config.json as read at start. */
export function setConfig(c) { config = c; }
export function getConfig() { return config; }

/** One API call; JSON in, JSON out. Returns {body, headers}. Throws ApiError. */
export async function call(method, path, body, extraHeaders = {}) {
  const headers = { Accept: 'application/json', ...extraHeaders };
  if (mode === 'header') headers['X-Sundial-Tenant'] = tenant;
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!res.ok) throw new ApiError(res.status, json);
  return { body: json, headers: res.headers, status: res.status };
}

export const get = async (path) => (await call('GET', path)).body;
export const post = async (path, body) => (await call('POST', path, body ?? {})).body;

/** Every page of a list (bounded). */
export async function all(path, max = 500) {
  const out = [];
  let cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await get(cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && out.length < max);
  return out;
}
