//! Why a sign-in failed, by step.

/// A failed sign-in, by step. The messages never hold tokens or secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// Finding the authorization server failed (metadata missing, invalid, or for another
    /// resource).
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The client could not be registered.
    #[error("OAuth client registration failed: {0}")]
    Registration(String),
    /// The authorization step failed (refused, timed out, a bad callback).
    #[error("OAuth authorization failed: {0}")]
    Authorization(String),
    /// The token exchange failed.
    #[error("OAuth token request failed: {0}")]
    Token(String),
    /// The sign-in could not be kept or read on disk.
    #[error("OAuth sign-in store: {0}")]
    Store(String),
    /// The server did not ask for a sign-in.
    #[error("{0}")]
    NotNeeded(String),
}
