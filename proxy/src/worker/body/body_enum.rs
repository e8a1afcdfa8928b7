//! Bodies of several kinds as one: [`body_enum!`] declares an enum whose variants
//! each hold a body and makes the enum a body itself, so the pipeline names what a
//! body is (streamed or buffered, from a backend or answered here) without writing
//! the same delegation for every such enum.

/// Declares an enum with one body per variant and implements `hyper::body::Body`
/// for it: each variant's frames pass through unchanged and its errors are boxed
/// into [`crate::BoxError`]. Every variant's body must be `Unpin` and carry
/// `Bytes`.
macro_rules! body_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident($body:ty),)+
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$variant_meta])* $variant($body),)+
        }

        impl hyper::body::Body for $name {
            type Data = bytes::Bytes;
            type Error = $crate::BoxError;

            fn poll_frame(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, $crate::BoxError>>>
            {
                match self.get_mut() {
                    $(Self::$variant(body) => std::pin::Pin::new(body)
                        .poll_frame(cx)
                        .map(|frame| frame.map(|result| result.map_err(Into::into))),)+
                }
            }

            fn is_end_stream(&self) -> bool {
                match self {
                    $(Self::$variant(body) => hyper::body::Body::is_end_stream(body),)+
                }
            }

            fn size_hint(&self) -> hyper::body::SizeHint {
                match self {
                    $(Self::$variant(body) => hyper::body::Body::size_hint(body),)+
                }
            }
        }
    };
}

pub(crate) use body_enum;
