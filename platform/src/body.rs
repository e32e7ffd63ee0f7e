//! Reading a request body that will not be used.
//!
//! Answering before the client finished sending its body makes workerd
//! reset the connection (seen locally through `wrangler dev` and Miniflare:
//! the client gets ECONNRESET instead of the 4xx). So an early refusal first
//! reads the body to the end and drops it, up to a bound past which the
//! sender is plainly abusive and a reset is acceptable.

use futures_util::StreamExt;
use worker::Request;

/// Bytes read and dropped at most.
pub const DRAIN_LIMIT_BYTES: usize = 32 * 1024 * 1024;

/// Reads and drops the rest of the body, chunk by chunk.
pub async fn drain(req: &mut Request) {
    let Ok(mut stream) = req.stream() else { return };
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => {
                seen += bytes.len();
                if seen > DRAIN_LIMIT_BYTES {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}
