// Sign-in for the deployed console: OpenID Connect authorization code flow with PKCE
// (RFC 7636, S256) against the JWT issuer the stack is configured with. The access token is
// kept in memory only (api.js): a reload signs in again. Only the PKCE verifier and the state
// survive the redirect, in sessionStorage, and are removed as soon as they are used.

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
  .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** A random PKCE code verifier (43 characters of base64url, 32 random bytes). */
export function newVerifier() {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return b64url(b);
}

/** The S256 code challenge of `verifier`. */
export async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return b64url(digest);
}

async function discover(issuer) {
  const res = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`, { credentials: 'omit' });
  if (!res.ok) throw new Error(`cannot read the issuer's OpenID configuration (HTTP ${res.status})`);
  return res.json();
}

function redirectUri() {
  return `${location.origin}/console`;
}

/** Sends the browser to the issuer's sign-in page. */
export async function signIn(cfg) {
  const meta = await discover(cfg.issuer);
  const verifier = newVerifier();
  const state = newVerifier();
  sessionStorage.setItem('sundial.pkce', JSON.stringify({ verifier, state }));
  const q = new URLSearchParams({
    response_type: 'code', client_id: cfg.clientId, redirect_uri: redirectUri(),
    scope: 'openid', state, code_challenge: await challengeOf(verifier), code_challenge_method: 'S256',
  });
  location.assign(`${meta.authorization_endpoint}?${q}`);
}

/** On return from the issuer (?code=&state=): the access token, or null when not returning. */
export async function completeSignIn(cfg) {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  if (!code) return null;
  const saved = JSON.parse(sessionStorage.getItem('sundial.pkce') || 'null');
  sessionStorage.removeItem('sundial.pkce');
  history.replaceState(null, '', `${location.pathname}${location.hash}`);
  if (!saved || saved.state !== params.get('state')) throw new Error('sign-in state does not match; sign in again');
  const meta = await discover(cfg.issuer);
  const res = await fetch(meta.token_endpoint, {
    method: 'POST', credentials: 'omit',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: redirectUri(), client_id: cfg.clientId,
      code_verifier: saved.verifier,
    }),
  });
  if (!res.ok) throw new Error(`the issuer refused the sign-in (HTTP ${res.status})`);
  const t = await res.json();
  return t.access_token || t.id_token;
}
