//! The command line: where to connect, what to ask for, how fast and how long.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) const USAGE: &str = "usage: culvert-load --url http[s]://HOST:PORT/PATH \
(--rate N | --connections N) --duration SECS [--warmup SECS] [--ca PEM] [--server-name NAME] \
[--timeout SECS]";

/// Most connections a closed loop keeps open at once.
const MAX_CONNECTIONS: usize = 8192;

/// What one run does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Options {
    /// The address connected to.
    pub(crate) target: SocketAddr,
    /// `Some` for `https`: the TLS settings.
    pub(crate) tls: Option<TlsOptions>,
    /// The `Host` field sent.
    pub(crate) host: String,
    /// The request target sent (path and query).
    pub(crate) path: String,
    /// When connections start.
    pub(crate) pace: Pace,
    /// How long connections are started for and counted.
    pub(crate) duration: Duration,
    /// How long connections are started for before counting begins.
    pub(crate) warmup: Duration,
    /// Longest one connection may take before it counts as failed.
    pub(crate) timeout: Duration,
}

/// When connections start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Pace {
    /// Open loop: this many connections started per second, whatever the answers do.
    Rate(f64),
    /// Closed loop: this many connections at a time, each followed by the next as soon
    /// as it ends (wrk's model, with the handshakes inside the latency).
    Connections(usize),
}

/// How a TLS connection is made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TlsOptions {
    /// PEM certificates trusted as roots; `None` takes any certificate (as wrk and
    /// h2load do).
    pub(crate) ca: Option<PathBuf>,
    /// The SNI name sent and checked against the certificate.
    pub(crate) server_name: String,
}

impl Options {
    /// Reads the flags.
    pub(crate) fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let (mut url, mut pace, mut duration) = (None, None, None);
        let (mut warmup, mut timeout) = (Duration::from_secs(1), Duration::from_secs(10));
        let (mut ca, mut server_name) = (None, None);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--url" => url = Some(value),
                "--rate" | "--connections" if pace.is_some() => {
                    return Err("give one of --rate and --connections".to_owned());
                }
                "--rate" => pace = Some(Pace::Rate(positive(&flag, &value)?)),
                "--connections" => pace = Some(Pace::Connections(count(&flag, &value)?)),
                "--duration" => duration = Some(seconds(&flag, &value)?),
                "--warmup" => warmup = seconds(&flag, &value)?,
                "--timeout" => timeout = seconds(&flag, &value)?,
                "--ca" => ca = Some(PathBuf::from(value)),
                "--server-name" => server_name = Some(value),
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        let url = url.ok_or("--url is required")?;
        let pace = pace.ok_or("--rate or --connections is required")?;
        let duration = duration.ok_or("--duration is required")?;
        let (https, authority, path) = split_url(&url)?;
        let target = authority
            .to_socket_addrs()
            .map_err(|err| format!("cannot resolve {authority}: {err}"))?
            .next()
            .ok_or_else(|| format!("{authority} resolves to no address"))?;
        let tls = https.then(|| TlsOptions {
            ca,
            server_name: server_name.unwrap_or_else(|| host_part(authority).to_owned()),
        });
        Ok(Self {
            target,
            tls,
            host: authority.to_owned(),
            path: path.to_owned(),
            pace,
            duration,
            warmup,
            timeout,
        })
    }
}

/// `(https, host:port, path)` of an `http` or `https` URL with an explicit port.
fn split_url(url: &str) -> Result<(bool, &str, &str), String> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(format!("{url}: only http:// and https:// URLs"));
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    if authority.is_empty() || !authority.contains(':') {
        return Err(format!("{url}: give the host and the port"));
    }
    Ok((https, authority, path))
}

/// The host of `host:port` (brackets of an IPv6 literal removed).
fn host_part(authority: &str) -> &str {
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

fn positive(flag: &str, value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(number) if number.is_finite() && number > 0.0 => Ok(number),
        _ => Err(format!("{flag}: {value} is not a positive number")),
    }
}

fn count(flag: &str, value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(number) if (1..=MAX_CONNECTIONS).contains(&number) => Ok(number),
        _ => Err(format!(
            "{flag}: {value} is not a count from 1 to {MAX_CONNECTIONS}"
        )),
    }
}

fn seconds(flag: &str, value: &str) -> Result<Duration, String> {
    let value = value.strip_suffix('s').unwrap_or(value);
    match value.parse::<f64>() {
        Ok(secs) if (0.0..86_400.0).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("{flag}: {value} is not a number of seconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn an_https_url_takes_its_host_for_sni_unless_told() {
        let options = parse(&[
            "--url",
            "https://127.0.0.1:18443/a?b=c",
            "--rate",
            "2500",
            "--duration",
            "5s",
        ])
        .unwrap();
        assert_eq!(options.target, "127.0.0.1:18443".parse().unwrap());
        assert_eq!(options.host, "127.0.0.1:18443");
        assert_eq!(options.path, "/a?b=c");
        assert_eq!(options.pace, Pace::Rate(2500.0));
        assert_eq!(options.duration, Duration::from_secs(5));
        assert_eq!(options.warmup, Duration::from_secs(1));
        let tls = options.tls.unwrap();
        assert_eq!(tls.server_name, "127.0.0.1");
        assert_eq!(tls.ca, None);

        let named = parse(&[
            "--url",
            "https://127.0.0.1:1",
            "--connections",
            "64",
            "--duration",
            "1",
            "--server-name",
            "bench.localhost",
            "--ca",
            "/tmp/ca.pem",
        ])
        .unwrap();
        assert_eq!(named.path, "/");
        assert_eq!(named.pace, Pace::Connections(64));
        let tls = named.tls.unwrap();
        assert_eq!(tls.server_name, "bench.localhost");
        assert_eq!(tls.ca, Some(PathBuf::from("/tmp/ca.pem")));
    }

    #[test]
    fn bad_command_lines_are_refused_with_the_reason() {
        let cases: &[(&[&str], &str)] = &[
            (&["--rate", "1", "--duration", "1"], "--url is required"),
            (
                &["--url", "http://127.0.0.1:1/", "--duration", "1"],
                "--rate or --connections",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1:1/",
                    "--rate",
                    "1",
                    "--connections",
                    "1",
                    "--duration",
                    "1",
                ],
                "one of",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1:1/",
                    "--connections",
                    "0",
                    "--duration",
                    "1",
                ],
                "count from 1",
            ),
            (
                &["--url", "ftp://x:1/", "--rate", "1", "--duration", "1"],
                "only http",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1/",
                    "--rate",
                    "1",
                    "--duration",
                    "1",
                ],
                "port",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1:1/",
                    "--rate",
                    "0",
                    "--duration",
                    "1",
                ],
                "positive",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1:1/",
                    "--rate",
                    "1",
                    "--duration",
                    "x",
                ],
                "seconds",
            ),
            (
                &["--url", "http://127.0.0.1:1/", "--bogus", "1"],
                "unknown flag",
            ),
            (&["--url"], "needs a value"),
        ];
        for (args, reason) in cases {
            let error = parse(args).unwrap_err();
            assert!(error.contains(reason), "{args:?}: {error}");
        }
    }
}
