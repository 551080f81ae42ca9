//! The relay's run with a remote upstream: the same client reader, server reader, writer and
//! sweeper as with a child process, with the [`http`](super::http) transport in place of the
//! child's pipes.
//!
//! The client's lines go to the transport as whole messages (a queue instead of a stdin); what
//! the transport receives (JSON bodies, SSE events, and the errors it writes for requests whose
//! HTTP exchange failed) comes back as frames into the same server-side path, so routing,
//! shaping, timeouts and telemetry are the ones of the stdio relay. A request the sweeper answers
//! at the request timeout is also named to the transport, which cancels it upstream.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::time::timeout;

use super::from_client::ToServer;
use super::http::{self, HttpUpstream};
use super::lines::{FrameQueue, LineReader};
use super::shared::Shared;
use super::writer::ClientOut;
use super::{
    DRAIN_AFTER_EXIT, Relay, RelayError, RelayExit, StopCause, WRITER_DRAIN, answer_orphans,
    expire_requests, from_client, from_server, log, writer,
};

/// How long the transport gets, after the client left, to end the session (HTTP DELETE) once
/// the requests in flight are answered or the grace time has passed.
const SESSION_END: std::time::Duration = std::time::Duration::from_secs(3);

impl Relay {
    /// [`Relay::run_until`] with a remote server.
    pub(super) async fn run_http<I, O, S>(
        &self,
        upstream: &HttpUpstream,
        client_in: I,
        client_out: O,
        stop: S,
    ) -> Result<RelayExit, RelayError>
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin + Send + 'static,
        S: Future<Output = ()>,
    {
        let max = self.options.max_line_bytes;
        let grace = self.options.shutdown_grace;
        let (to_transport, messages) = mpsc::channel(writer::QUEUE);
        let (frames, received) = mpsc::channel(writer::QUEUE);
        let transport = http::Transport::new(upstream, frames, max)?;
        let shared = Arc::new(Shared::new(self.shaper.clone(), max));
        let (out, writer) = ClientOut::queue(client_out);
        let mut client = tokio::spawn(from_client::run(
            LineReader::new(client_in, max),
            ToServer::queue(to_transport),
            Arc::clone(&shared),
            out.clone(),
        ));
        let mut server = tokio::spawn(from_server::run(
            FrameQueue(received),
            Arc::clone(&shared),
            out.clone(),
        ));
        // The requests answered at the request timeout, for the transport to cancel upstream.
        let (given_up, expired) = mpsc::unbounded_channel();
        let mut transport = tokio::spawn(transport.run(messages, expired, grace));
        let sweeper = self.options.request_timeout.map(|limit| {
            tokio::spawn(expire_requests(
                Arc::clone(&shared),
                out.clone(),
                limit,
                Some(given_up),
            ))
        });

        let cause = tokio::select! {
            () = stop => {
                log::warn(format_args!("stopping: ending the upstream session"));
                // Dropping the client task drops the transport's queue.
                client.abort();
                StopCause::Stopped
            }
            // Dropping the queue tells the transport that the client left.
            to_server = &mut client => {
                drop(to_server);
                StopCause::ClientClosed
            }
        };
        // The transport lets the requests in flight finish (up to the grace time), then ends
        // the session.
        if timeout(grace + SESSION_END, &mut transport).await.is_err() {
            log::warn(format_args!(
                "the upstream transport did not stop within {:?}; dropping it",
                grace + SESSION_END
            ));
            transport.abort();
        }
        // Its frames are queued: the server side relays them, then sees the queue close.
        if timeout(DRAIN_AFTER_EXIT, &mut server).await.is_err() {
            server.abort();
        }
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        answer_orphans(
            &shared,
            &out,
            "the connection to the upstream server was closed",
        )
        .await;
        out.drain(Some(writer), WRITER_DRAIN).await;
        Ok(RelayExit { code: 0, cause })
    }
}
