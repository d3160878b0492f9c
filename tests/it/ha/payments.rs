//! A client posting keyed payments to the replicas while the cluster fails over, the way a
//! careful client does: each payment has its own `Idempotency-Key`, and it is sent again after a
//! 503 or a connection error until it gets its 201. Every answer is recorded, for the test to
//! check what the service said while there was no primary, and which payments it acknowledged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::common::ADMIN_TOKEN;

/// Between two payments, and between two tries of one.
const PAUSE: Duration = Duration::from_millis(50);
const RETRY_AFTER: Duration = Duration::from_millis(100);
/// A payment still unanswered after this is given up, and the test fails on it.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// One answer (or the lack of one) to one try of a payment.
#[derive(Debug, Clone)]
pub struct Answer {
    pub key: String,
    pub sent: Instant,
    pub received: Instant,
    /// `None`: no HTTP answer (connection refused or reset, time-out).
    pub status: Option<u16>,
    pub content_type: String,
    /// The problem's `code` (`unavailable`, `internal_error`...), for a problem.
    pub code: Option<String>,
    pub retry_after: Option<String>,
    /// The ledger entry of a 201.
    pub entry_id: Option<i64>,
    /// What went wrong: the transport error, or the body of an error answer.
    pub detail: String,
}

/// A payment the client sent: its key, member and amount (unique per payment, so the ledger
/// shows which payment an entry is).
#[derive(Debug, Clone)]
pub struct Sent {
    pub key: String,
    pub member_id: i64,
    pub amount_cents: i64,
    /// The entry its 201 named; `None` if it was given up.
    pub acknowledged: Option<i64>,
}

/// The running client.
pub struct Payments {
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: CancellationToken,
    task: JoinHandle<Vec<Sent>>,
}

/// What the client did, once stopped.
pub struct Record {
    pub answers: Vec<Answer>,
    pub sent: Vec<Sent>,
}

impl Payments {
    /// Starts posting payments for `members`, round robin over the replicas at `bases`.
    pub fn start(bases: Vec<String>, members: Vec<i64>) -> Payments {
        finesettle::tls::install_crypto_provider();
        let answers = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let task = tokio::spawn(post_until_stopped(bases, members, Arc::clone(&answers), stop.clone()));
        Payments { answers, stop, task }
    }

    /// The answers so far.
    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().unwrap().clone()
    }

    /// Stops after the payment in flight got its answer.
    pub async fn stop(self) -> Record {
        self.stop.cancel();
        let sent = self.task.await.expect("the payments client");
        Record {
            answers: self.answers.lock().unwrap().clone(),
            sent,
        }
    }
}

async fn post_until_stopped(
    bases: Vec<String>,
    members: Vec<i64>,
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: CancellationToken,
) -> Vec<Sent> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let mut sent = Vec::new();
    for n in 0_usize.. {
        if stop.is_cancelled() {
            break;
        }
        let payment = Sent {
            key: format!("ha-payment-{n}"),
            member_id: members[n % members.len()],
            amount_cents: 1_000 + i64::try_from(n).unwrap(),
            acknowledged: None,
        };
        let url = format!(
            "{}/api/v1/members/{}/payments",
            bases[n % bases.len()],
            payment.member_id
        );
        let acknowledged = post_until_created(&client, &url, &payment, &answers).await;
        sent.push(Sent {
            acknowledged,
            ..payment
        });
        tokio::time::sleep(PAUSE).await;
    }
    sent
}

/// Posts `payment` until a 201 (answering its entry), for at most [`GIVE_UP_AFTER`].
async fn post_until_created(
    client: &reqwest::Client,
    url: &str,
    payment: &Sent,
    answers: &Mutex<Vec<Answer>>,
) -> Option<i64> {
    let first = Instant::now();
    while first.elapsed() < GIVE_UP_AFTER {
        let answer = post_once(client, url, payment).await;
        let entry = answer.entry_id.filter(|_| answer.status == Some(201));
        answers.lock().unwrap().push(answer);
        if entry.is_some() {
            return entry;
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
    None
}

async fn post_once(client: &reqwest::Client, url: &str, payment: &Sent) -> Answer {
    let sent = Instant::now();
    let result = client
        .post(url)
        .bearer_auth(ADMIN_TOKEN)
        .header("idempotency-key", &payment.key)
        .json(&serde_json::json!({ "amount_cents": payment.amount_cents }))
        .send()
        .await;
    let mut answer = Answer {
        key: payment.key.clone(),
        sent,
        received: sent,
        status: None,
        content_type: String::new(),
        code: None,
        retry_after: None,
        entry_id: None,
        detail: String::new(),
    };
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            answer.received = Instant::now();
            answer.detail = format!("{error:?}");
            return answer;
        }
    };
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    answer.status = Some(response.status().as_u16());
    answer.content_type = header("content-type").unwrap_or_default();
    answer.retry_after = header("retry-after");
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    answer.received = Instant::now();
    answer.code = body["code"].as_str().map(str::to_owned);
    answer.entry_id = body["id"].as_i64();
    if answer.status != Some(201) {
        answer.detail = body.to_string();
    }
    answer
}
