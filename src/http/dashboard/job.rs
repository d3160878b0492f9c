//! The job's schedule with its next fires, and who holds its lock.

use std::fmt::Write;

use super::data::{DashboardData, LockState};
use super::html::{business, escape, relative, span, utc};
use crate::schedule::settle_target;

pub fn job_section(out: &mut String, data: &DashboardData) {
    let job = &data.job;
    let tz = escape(data.tz.name());
    let last = job
        .last_success
        .map_or_else(|| "none yet".to_owned(), |d| d.to_string());
    let _ = write!(
        out,
        r#"<section class="card double" id="job"><h2>Job <code>{name}</code></h2>
<dl class="facts"><dt>Schedule</dt><dd><code>{cron}</code> in {tz}</dd>
<dt>Last settled date</dt><dd>{last}</dd></dl>
<table><caption>Next fires</caption>
<thead><tr><th>UTC</th><th>Business time ({tz})</th><th>Settles</th><th>When</th></tr></thead><tbody>"#,
        name = escape(&job.name),
        cron = escape(&job.cron),
    );
    for &fire in &job.next_fires {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            utc(fire),
            business(fire, data.tz),
            settle_target(fire, data.tz),
            relative(fire, data.now)
        );
    }
    if job.next_fires.is_empty() {
        out.push_str(r#"<tr><td colspan="4">The schedule has no further fire.</td></tr>"#);
    }
    out.push_str("</tbody></table></section>");
}

pub fn lock_section(out: &mut String, data: &DashboardData) {
    out.push_str(r#"<section class="card" id="lock"><h2>Lock</h2>"#);
    match &data.lock {
        LockState::Never => out.push_str("<p>Never taken: the job has not run yet.</p>"),
        LockState::Unavailable => {
            out.push_str(r#"<p><span class="badge s-failed">UNAVAILABLE</span> The lock store did not answer.</p>"#)
        }
        LockState::Row(lock) if lock.held => {
            let lease = (lock.locked_until - lock.locked_at).num_seconds().max(1);
            let left = (lock.locked_until - data.now).num_seconds().clamp(0, lease);
            let _ = write!(
                out,
                r#"<p><span class="badge s-held">HELD</span> by <strong>{holder}</strong>, fencing token {token}</p>
<dl class="facts"><dt>Taken at</dt><dd>{taken}</dd><dt>Lease until</dt><dd>{until}</dd>
<dt>Time left</dt><dd>{left_words}</dd></dl>
<div class="lease" title="lease left"><div style="width:{percent}%"></div></div>"#,
                holder = escape(&lock.locked_by),
                token = lock.fencing_token,
                taken = utc(lock.locked_at),
                until = utc(lock.locked_until),
                left_words = span(left),
                percent = left * 100 / lease,
            );
        }
        LockState::Row(lock) => {
            let _ = write!(
                out,
                r#"<p><span class="badge s-free">FREE</span> Last held by <strong>{holder}</strong>, fencing token {token}.</p>
<dl class="facts"><dt>Taken at</dt><dd>{taken}</dd><dt>Free since</dt><dd>{until} ({ago})</dd></dl>"#,
                holder = escape(&lock.locked_by),
                token = lock.fencing_token,
                taken = utc(lock.locked_at),
                until = utc(lock.locked_until),
                ago = relative(lock.locked_until, data.now),
            );
        }
    }
    out.push_str("</section>");
}
