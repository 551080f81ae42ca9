//! Tests of the HTTP client ([`super::client`]) against servers and proxies of their own on
//! loopback: tunnels, credentials, TLS inside a tunnel, timeouts, bounded bodies.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use hyper_util::client::proxy::matcher::Matcher;
use std::time::Duration;

use super::client::*;

/// Reads one request head (up to its blank line) and, with `Content-Length`, its body.
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0usize);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    head
}

/// A listener on a free loopback port, and the port.
fn bound() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    (listener, port)
}

/// An HTTP server on loopback that answers each request `200 {}` and reports its head.
fn target() -> (u16, mpsc::Receiver<String>) {
    let (listener, port) = bound();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let tx = tx.clone();
            thread::spawn(move || {
                loop {
                    let head = read_head(&mut stream);
                    if head.is_empty() || tx.send(head).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, rx)
}

/// A proxy that serves `CONNECT` (and nothing else): it reports each head and relays bytes
/// both ways; a target it cannot reach gets `502`.
fn proxy() -> (u16, mpsc::Receiver<String>) {
    let (listener, port) = bound();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut client) = stream else { return };
            let head = read_head(&mut client);
            let target = head
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let _ = tx.send(head);
            let Ok(server) = TcpStream::connect(&target) else {
                let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
                continue;
            };
            let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            let (mut c2, mut s2) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let (mut client, mut server) = (client, server);
            // Either side's end closes both (a clone left open would hold the socket).
            thread::spawn(move || {
                let _ = std::io::copy(&mut c2, &mut s2);
                let _ = s2.shutdown(std::net::Shutdown::Both);
                let _ = c2.shutdown(std::net::Shutdown::Both);
            });
            thread::spawn(move || {
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (port, rx)
}

fn client(url: &str, headers: &HeaderMap, proxies: &Matcher) -> Client {
    let url = url::Url::parse(url).expect("url");
    Client::with_proxies(&url, headers, Duration::from_secs(5), proxies).expect("client")
}

fn recv(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a request arrives")
}

/// The value of header `name` in `head`; the test fails when it is sent more than once.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    let mut values = head.lines().filter_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    });
    let first = values.next();
    assert_eq!(values.next(), None, "{name} sent twice: {head}");
    first
}

#[tokio::test]
async fn a_proxy_s_tunnel_carries_the_request_with_the_proxy_s_credentials() {
    let (target_port, seen) = target();
    let (proxy_port, connects) = proxy();
    let proxies = Matcher::builder()
        .all(format!("http://us%3Aer:pass@127.0.0.1:{proxy_port}"))
        .build();
    let c = client(
        &format!("http://127.0.0.1:{target_port}/mcp"),
        &HeaderMap::new(),
        &proxies,
    );
    let response = c
        .post()
        .body(Bytes::from_static(b"{}"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    assert_eq!(&bytes(response).await.expect("body")[..], b"{}");
    let connect = recv(&connects);
    assert!(
        connect.starts_with(&format!("CONNECT 127.0.0.1:{target_port} HTTP/1.1\r\n")),
        "{connect}"
    );
    // "us:er:pass" (the user's `%3A` decoded), Base64.
    assert_eq!(
        header(&connect, "proxy-authorization"),
        Some("Basic dXM6ZXI6cGFzcw==")
    );
    let request = recv(&seen);
    assert!(
        request.starts_with("POST /mcp HTTP/1.1\r\n"),
        "origin form inside the tunnel: {request}"
    );
    assert_eq!(header(&request, "proxy-authorization"), None, "{request}");
}

#[tokio::test]
async fn an_http_url_without_a_port_is_tunneled_to_port_80() {
    let (proxy_port, connects) = proxy();
    let proxies = Matcher::builder()
        .all(format!("http://127.0.0.1:{proxy_port}"))
        .build();
    let c = client("http://mcp.invalid/mcp", &HeaderMap::new(), &proxies);
    let failed = c
        .post()
        .send()
        .await
        .expect_err("the proxy cannot reach it");
    assert!(failed.is_connect(), "{failed:?}");
    assert!(recv(&connects).starts_with("CONNECT mcp.invalid:80 HTTP/1.1\r\n"));
}

#[tokio::test]
async fn no_proxy_goes_straight_to_the_server() {
    let (target_port, seen) = target();
    let (proxy_port, connects) = proxy();
    let proxies = Matcher::builder()
        .all(format!("http://127.0.0.1:{proxy_port}"))
        .no("127.0.0.1")
        .build();
    let c = client(
        &format!("http://127.0.0.1:{target_port}/mcp"),
        &HeaderMap::new(),
        &proxies,
    );
    assert_eq!(c.get().send().await.expect("sent").status(), 200);
    assert!(recv(&seen).starts_with("GET /mcp HTTP/1.1\r\n"));
    assert!(connects.try_recv().is_err(), "the proxy saw nothing");
}

#[tokio::test]
async fn url_credentials_are_sent_as_basic_unless_an_authorization_header_is_given() {
    let (port, seen) = target();
    let url = format!("http://us%40er:p%3Ass@127.0.0.1:{port}/mcp");
    let none = Matcher::builder().build();
    let c = client(&url, &HeaderMap::new(), &none);
    c.post().send().await.expect("sent");
    let request = recv(&seen);
    assert!(request.starts_with("POST /mcp HTTP/1.1\r\n"), "{request}");
    // "us@er:p:ss", Base64.
    assert_eq!(
        header(&request, "authorization"),
        Some("Basic dXNAZXI6cDpzcw==")
    );
    assert_eq!(
        header(&request, "host"),
        Some(&*format!("127.0.0.1:{port}"))
    );
    assert_eq!(
        header(&request, "user-agent"),
        Some(concat!("mcp-budget/", env!("CARGO_PKG_VERSION")))
    );

    let mut given = HeaderMap::new();
    given.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
    given.insert(http::header::ACCEPT, HeaderValue::from_static("a/b"));
    let c = client(&url, &given, &none);
    c.post()
        .header(http::header::ACCEPT, "x")
        .send()
        .await
        .expect("sent");
    let request = recv(&seen);
    assert_eq!(header(&request, "authorization"), Some("Bearer t"));
    assert_eq!(header(&request, "accept"), Some("x"));
}

#[tokio::test]
async fn tls_to_an_https_upstream_runs_inside_the_proxy_s_tunnel() {
    // The target reports the first bytes it gets and hangs up.
    let (listener, target_port) = bound();
    let (tx, first) = mpsc::channel();
    thread::spawn(move || {
        if let Some(Ok(mut stream)) = listener.incoming().next() {
            let mut bytes = [0u8; 3];
            let _ = stream.read_exact(&mut bytes);
            let _ = tx.send(bytes);
        }
    });
    let (proxy_port, connects) = proxy();
    let proxies = Matcher::builder()
        .all(format!("http://127.0.0.1:{proxy_port}"))
        .build();
    let c = client(
        &format!("https://localhost:{target_port}/mcp"),
        &HeaderMap::new(),
        &proxies,
    );
    assert_eq!(c.proxy(), Some(&*format!("http://127.0.0.1:{proxy_port}")));
    let failed = c.post().send().await.expect_err("the target hangs up");
    assert!(failed.is_connect(), "{failed:?}");
    let connect = recv(&connects);
    assert!(
        connect.starts_with(&format!("CONNECT localhost:{target_port} HTTP/1.1\r\n")),
        "{connect}"
    );
    assert_eq!(
        header(&connect, "user-agent"),
        Some(concat!("mcp-budget/", env!("CARGO_PKG_VERSION")))
    );
    // A TLS record of type handshake (22), version 3.x: the ClientHello, through the tunnel.
    let bytes = first.recv_timeout(Duration::from_secs(10)).expect("bytes");
    assert_eq!(bytes[..2], [22, 3], "{bytes:?}");
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_handshake_fails_at_the_connect_timeout() {
    // Accepts, never answers the TLS ClientHello.
    let (listener, port) = bound();
    let _held = thread::spawn(move || {
        let kept: Vec<_> = listener.incoming().take(4).collect();
        thread::sleep(Duration::from_secs(30));
        drop(kept);
    });
    let url = url::Url::parse(&format!("https://localhost:{port}/mcp")).expect("url");
    let c = Client::with_proxies(
        &url,
        &HeaderMap::new(),
        Duration::from_millis(500),
        &Matcher::builder().build(),
    )
    .expect("client");
    let started = std::time::Instant::now();
    let failed = c.post().send().await.expect_err("no handshake");
    assert!(failed.is_connect(), "{failed:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        format!("{failed:?}").contains("no connection within 0.5 s"),
        "{failed:?}"
    );
}

#[test]
fn a_socks_proxy_is_refused_at_start() {
    let url = url::Url::parse("https://example.com/mcp").expect("url");
    let proxies = Matcher::builder().all("socks5://127.0.0.1:1080").build();
    let refused = Client::with_proxies(&url, &HeaderMap::new(), Duration::from_secs(1), &proxies)
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("socks5://"), "{refused}");
}

#[tokio::test]
async fn an_error_body_is_read_up_to_its_bound() {
    // 1 MB promised and sent; only the bound is kept.
    let (listener, port) = bound();
    thread::spawn(move || {
        if let Some(Ok(mut stream)) = listener.incoming().next() {
            let _ = read_head(&mut stream);
            let head = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 1000000\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&vec![b'x'; 1_000_000]);
        }
    });
    let c = client(
        &format!("http://127.0.0.1:{port}/mcp"),
        &HeaderMap::new(),
        &Matcher::builder().build(),
    );
    let response = c.post().send().await.expect("sent");
    assert_eq!(response.status(), 500);
    let kept = bytes_at_most(response, 1000).await;
    assert_eq!(&kept[..], &[b'x'; 1000][..]);
}
