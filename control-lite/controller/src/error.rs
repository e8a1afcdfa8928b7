//! The crate's one error type: what rendering and the pusher refuse.
//!
//! A refusal names the field at fault so the controller can put it in the
//! Gateway's `Accepted=False` / `InvalidParameters` message unchanged. A push
//! that fails at a pod is no refusal: it is a [`crate::push::Failure`] in the
//! plane's summary.

/// Why a dedicated data plane could not be rendered, or its pushes not set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Gateway has no name, namespace or UID (the owner reference needs all three).
    #[error("the Gateway has no {0}")]
    MissingGatewayField(&'static str),
    /// Neither the GatewayConfig nor the controller names an image.
    #[error("no data-plane image configured")]
    NoImage,
    /// `replicas` does not fit a Kubernetes replica count.
    #[error("replicas {0} is more than a Deployment takes")]
    TooManyReplicas(u32),
    /// `autoscaling.maxReplicas` is below the minimum (`replicas`, default 1).
    #[error("autoscaling.maxReplicas {max} is below replicas {min}")]
    AutoscalingBounds {
        /// The minimum, `replicas` or its default.
        min: u32,
        /// `autoscaling.maxReplicas`.
        max: u32,
    },
    /// Autoscaling with `replicas: 0`: the HorizontalPodAutoscaler needs at least one.
    #[error("autoscaling needs replicas of at least 1, not 0")]
    AutoscalingFromZero,
    /// `autoscaling.targetInFlight` is zero or does not fit a quantity.
    #[error("autoscaling.targetInFlight {0} is out of range (1 to 2147483647)")]
    AutoscalingTarget(u32),
    /// The GatewayConfig has a tunnel but the controller named no Secret with its token.
    #[error("the GatewayConfig has a tunnel but no tunnel token Secret was given")]
    MissingTunnelSecret,
    /// A Secret name or key the controller passed is empty.
    #[error("the {0} Secret has no name or key")]
    MissingSecret(&'static str),
    /// The controller's pod labels select nothing narrower than every pod.
    #[error("the controller's pod labels are empty, so the NetworkPolicy would admit every pod")]
    EmptyControllerSelector,
    /// A label of the controller's own selectors is not a valid label.
    #[error("invalid controller selector label {key:?}: {reason}")]
    ControllerLabel {
        /// The label key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An object could not be serialised for server-side apply.
    #[error("serialising {kind} for apply: {message}")]
    Serialize {
        /// The object's kind.
        kind: &'static str,
        /// serde_json's message.
        message: String,
    },
    /// The CA bundle a plane's config API certificate is checked against is
    /// unusable.
    #[error("the config API CA bundle is unusable: {0}")]
    ConfigApiCa(String),
    /// The name a plane's config API certificate must be valid for is not a DNS
    /// name or IP address.
    #[error("{0:?} is not a valid TLS server name")]
    ConfigApiServerName(String),
    /// A plane's config API token is empty or cannot be sent in a header (the
    /// token itself is never part of the message).
    #[error("the config API token is empty or not a valid header value")]
    ConfigApiToken,
    /// The pusher was created outside a Tokio runtime.
    #[error("the pusher needs a Tokio runtime")]
    NoRuntime,
}
