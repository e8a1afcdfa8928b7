//! The plane's HorizontalPodAutoscaler (autoscaling/v2), rendered only when the
//! GatewayConfig has `autoscaling`.
//!
//! It scales the Deployment on the Pods metric `culvert_requests_in_flight`, the
//! proxy's in-flight requests gauge: concurrency is what saturates an I/O-bound
//! proxy, not CPU. The target is an average value per pod
//! (`targetInFlight`, default 50); the bounds are `replicas` (default 1) and
//! `maxReplicas`, checked before this runs. The HPA reads Pods metrics from the
//! custom metrics API, which only an adapter such as prometheus-adapter serves;
//! without one it reports `FailedGetPodsMetric` and keeps the minimum. Start at
//! `autoscaler`.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    MetricIdentifier, MetricSpec, MetricTarget, PodsMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{AutoscalingBounds, IN_FLIGHT_METRIC, Plane};

/// The autoscaler for `bounds`.
pub(super) fn autoscaler(plane: &Plane<'_>, bounds: AutoscalingBounds) -> HorizontalPodAutoscaler {
    HorizontalPodAutoscaler {
        metadata: plane.metadata(&plane.names.workload),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: "Deployment".to_owned(),
                name: plane.names.workload.clone(),
            },
            min_replicas: Some(bounds.min),
            max_replicas: bounds.max,
            metrics: Some(vec![MetricSpec {
                type_: "Pods".to_owned(),
                pods: Some(PodsMetricSource {
                    metric: MetricIdentifier {
                        name: IN_FLIGHT_METRIC.to_owned(),
                        selector: None,
                    },
                    target: MetricTarget {
                        type_: "AverageValue".to_owned(),
                        average_value: Some(Quantity(bounds.target_in_flight.to_string())),
                        ..MetricTarget::default()
                    },
                }),
                ..MetricSpec::default()
            }]),
            ..HorizontalPodAutoscalerSpec::default()
        }),
        status: None,
    }
}
