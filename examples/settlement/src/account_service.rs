//! The fake account service: the "far side" of the settlement, with its own idempotency keys.
//!
//! A small HTTP server on loopback (plain hyper 1, one task per connection) standing in for the
//! account system that credits merchants. It behaves like a well-built real one:
//!
//! - `POST /credit {idempotencyKey, merchantId, settleDate, amount}`: applies a credit once per
//!   key. The same key again returns the first receipt (`200`, header `idempotent-replay: true`)
//!   and credits nothing; the same key with a different body is `409 KEY_REUSED`.
//! - `GET /credit/{key}`: the receipt for a key, or `404`: what "query before retry" asks.
//! - `GET /ledger`: every credit applied, in order: the far side's ledger for reconciliation.
//!
//! Fault switches ([`Faults`]) produce the cases the toolkit must survive: drop the response
//! *after* applying a credit (the connection closes with no answer: "did it happen?"), and make
//! lookups fail (the far side cannot say).
//!
//! [`AccountClient`] is the handler's side: a [`FarSide`] that sorts transport failures into
//! "certainly not sent" and "sent, no answer", which is all the retry logic needs.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_idempotency::outbound::{CallError, FarSide, IdempotencyKey, Lookup};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A credit to apply (the body of `POST /credit` without the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreditRequest {
    /// The merchant.
    pub merchant_id: String,
    /// The settlement day (`YYYY-MM-DD`).
    pub settle_date: String,
    /// Minor units (cents), > 0.
    pub amount: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreditBody {
    idempotency_key: String,
    #[serde(flatten)]
    credit: CreditRequest,
}

/// An applied credit: the receipt, and one line of the service's ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credit {
    /// The service's own transaction id.
    pub transaction_id: String,
    /// The key it was applied under.
    pub idempotency_key: String,
    /// The merchant.
    pub merchant_id: String,
    /// The settlement day.
    pub settle_date: String,
    /// Minor units.
    pub amount: i64,
}

#[derive(Debug, Serialize)]
struct Problem<'a> {
    code: &'a str,
    message: String,
}

/// Fault switches, changeable while the service runs.
#[derive(Debug, Default)]
pub struct Faults {
    drop_every: AtomicU64,
    lookups_down: AtomicBool,
    applied: AtomicU64,
    dropped: AtomicU64,
}

impl Faults {
    /// Drop the response of every `n`-th newly applied credit (0: never). The credit is applied;
    /// the client sees the connection close with no answer.
    pub fn drop_every(&self, n: u64) {
        self.drop_every.store(n, Ordering::SeqCst);
    }

    /// Make `GET /credit/{key}` answer `503`: the far side cannot say.
    pub fn lookups_down(&self, down: bool) {
        self.lookups_down.store(down, Ordering::SeqCst);
    }

    /// Responses dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Default)]
struct Book {
    by_key: HashMap<String, usize>,
    ledger: Vec<Credit>,
}

#[derive(Debug, Default)]
struct State {
    book: Mutex<Book>,
    faults: Faults,
}

/// The running service. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct AccountService {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Drop for AccountService {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Why the service would not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on 127.0.0.1: {0}")]
pub struct StartError(#[from] std::io::Error);

/// A dropped response: hyper closes the connection without writing one.
#[derive(Debug, thiserror::Error)]
#[error("fault injection: response dropped after applying the credit")]
struct Dropped;

impl AccountService {
    /// Listens on `127.0.0.1:0` (a free port) and serves until dropped.
    pub async fn start() -> Result<Self, StartError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let st = state.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(st.clone(), req));
                    // A connection error is what a dropped response looks like; nothing to do.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Ok(AccountService { addr, state, accept })
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The fault switches.
    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// The ledger as the service holds it (in-process view; `GET /ledger` serves the same).
    pub fn ledger(&self) -> Vec<Credit> {
        self.state.book.lock().map(|b| b.ledger.clone()).unwrap_or_default()
    }
}

fn json<T: Serialize>(status: StatusCode, body: &T) -> Response<Full<Bytes>> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(bytes)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    resp
}

fn problem(status: StatusCode, code: &str, message: impl Into<String>) -> Response<Full<Bytes>> {
    json(status, &Problem { code, message: message.into() })
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Dropped> {
    let path = req.uri().path().to_owned();
    match (req.method().clone(), path.as_str()) {
        (Method::POST, "/credit") => {
            let body = match req.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return Ok(problem(StatusCode::BAD_REQUEST, "BAD_BODY", e.to_string())),
            };
            credit(&state, &body)
        }
        (Method::GET, "/ledger") => {
            let ledger = state.book.lock().map(|b| b.ledger.clone()).unwrap_or_default();
            Ok(json(StatusCode::OK, &ledger))
        }
        (Method::GET, p) if p.starts_with("/credit/") => {
            if state.faults.lookups_down.load(Ordering::SeqCst) {
                return Ok(problem(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "lookups are down"));
            }
            let key = &p["/credit/".len()..];
            let found = state.book.lock().ok().and_then(|b| b.by_key.get(key).map(|&i| b.ledger[i].clone()));
            Ok(match found {
                Some(c) => json(StatusCode::OK, &c),
                None => problem(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no credit under key {key}")),
            })
        }
        _ => Ok(problem(StatusCode::NOT_FOUND, "NO_ROUTE", format!("{path} is not a route"))),
    }
}

fn credit(state: &State, body: &[u8]) -> Result<Response<Full<Bytes>>, Dropped> {
    let body: CreditBody = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return Ok(problem(StatusCode::BAD_REQUEST, "BAD_BODY", e.to_string())),
    };
    if body.credit.amount <= 0 {
        return Ok(problem(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_AMOUNT", "amount must be > 0"));
    }
    let Ok(mut book) = state.book.lock() else {
        return Ok(problem(StatusCode::INTERNAL_SERVER_ERROR, "POISONED", "ledger lock poisoned"));
    };
    if let Some(&i) = book.by_key.get(&body.idempotency_key) {
        let first = &book.ledger[i];
        let same = first.merchant_id == body.credit.merchant_id
            && first.settle_date == body.credit.settle_date
            && first.amount == body.credit.amount;
        if !same {
            return Ok(problem(StatusCode::CONFLICT, "KEY_REUSED", "this key was used for another credit"));
        }
        let mut resp = json(StatusCode::OK, first);
        resp.headers_mut().insert("idempotent-replay", hyper::header::HeaderValue::from_static("true"));
        return Ok(resp);
    }
    let credit = Credit {
        transaction_id: format!("tx{:08}", book.ledger.len() + 1),
        idempotency_key: body.idempotency_key.clone(),
        merchant_id: body.credit.merchant_id,
        settle_date: body.credit.settle_date,
        amount: body.credit.amount,
    };
    book.ledger.push(credit.clone());
    let i = book.ledger.len() - 1;
    book.by_key.insert(body.idempotency_key, i);
    drop(book);
    let n = state.faults.applied.fetch_add(1, Ordering::SeqCst) + 1;
    let every = state.faults.drop_every.load(Ordering::SeqCst);
    if every > 0 && n.checked_rem(every) == Some(0) {
        state.faults.dropped.fetch_add(1, Ordering::SeqCst);
        return Err(Dropped);
    }
    Ok(json(StatusCode::CREATED, &credit))
}

/// The handler's client of the account service.
#[derive(Debug, Clone)]
pub struct AccountClient {
    base: String,
    http: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl AccountClient {
    /// A client of the service at `base` (`http://host:port`), giving up on an answer after
    /// `timeout`.
    pub fn new(base: impl Into<String>, timeout: Duration) -> Self {
        let http = Client::builder(TokioExecutor::new()).build_http();
        AccountClient { base: base.into(), http, timeout }
    }

    async fn send(&self, req: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), CallError> {
        let resp = match tokio::time::timeout(self.timeout, self.http.request(req)).await {
            Err(_) => return Err(CallError::NoAnswer(format!("no answer within {:?}", self.timeout))),
            Ok(Err(e)) if e.is_connect() => return Err(CallError::NotSent(format!("connect: {e}"))),
            Ok(Err(e)) => return Err(CallError::NoAnswer(format!("connection lost: {e}"))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        match tokio::time::timeout(self.timeout, resp.into_body().collect()).await {
            Ok(Ok(body)) => Ok((status, body.to_bytes())),
            Ok(Err(e)) => Err(CallError::NoAnswer(format!("body lost: {e}"))),
            Err(_) => Err(CallError::NoAnswer(format!("no body within {:?}", self.timeout))),
        }
    }

    /// The service's whole ledger (`GET /ledger`), for reconciliation.
    pub async fn ledger(&self) -> Result<Vec<Credit>, CallError> {
        let req = get(&format!("{}/ledger", self.base))?;
        let (status, body) = self.send(req).await?;
        if status != StatusCode::OK {
            return Err(CallError::NoAnswer(format!("GET /ledger: status {status}")));
        }
        serde_json::from_slice(&body).map_err(|e| CallError::NoAnswer(format!("GET /ledger: bad JSON: {e}")))
    }
}

fn get(uri: &str) -> Result<Request<Full<Bytes>>, CallError> {
    Request::get(uri)
        .body(Full::new(Bytes::new()))
        .map_err(|e| CallError::NotSent(format!("bad request {uri}: {e}")))
}

fn rejected(status: StatusCode, body: &[u8]) -> CallError {
    #[derive(Deserialize)]
    struct P {
        code: String,
        message: String,
    }
    match serde_json::from_slice::<P>(body) {
        Ok(p) => CallError::Rejected { code: p.code, message: p.message },
        Err(_) => CallError::Rejected {
            code: status.as_u16().to_string(),
            message: String::from_utf8_lossy(body).into(),
        },
    }
}

impl FarSide for AccountClient {
    type Request = CreditRequest;
    type Receipt = Credit;

    async fn submit(&self, key: &IdempotencyKey, request: &CreditRequest) -> Result<Credit, CallError> {
        let body = serde_json::json!({
            "idempotencyKey": key.as_str(),
            "merchantId": request.merchant_id,
            "settleDate": request.settle_date,
            "amount": request.amount,
        });
        let req = Request::post(format!("{}/credit", self.base))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| CallError::NotSent(format!("bad request: {e}")))?;
        let (status, body) = self.send(req).await?;
        match status {
            StatusCode::OK | StatusCode::CREATED => serde_json::from_slice(&body)
                .map_err(|e| CallError::NoAnswer(format!("unreadable receipt (status {status}): {e}"))),
            s if s.is_server_error() => Err(CallError::NoAnswer(format!("status {s}"))),
            s => Err(rejected(s, &body)),
        }
    }

    async fn lookup(&self, key: &IdempotencyKey) -> Result<Lookup<Credit>, CallError> {
        let req = get(&format!("{}/credit/{}", self.base, key.as_str()))?;
        let (status, body) = self.send(req).await?;
        match status {
            StatusCode::OK => serde_json::from_slice(&body)
                .map(Lookup::Found)
                .map_err(|e| CallError::NoAnswer(format!("unreadable receipt: {e}"))),
            StatusCode::NOT_FOUND => Ok(Lookup::NotFound),
            s => Err(CallError::NoAnswer(format!("lookup status {s}"))),
        }
    }
}
