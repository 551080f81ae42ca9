//! Detection of base64 blobs and `data:` URIs inside JSON strings (issue 2 §4).
//!
//! PLACEHOLDER: being written.
