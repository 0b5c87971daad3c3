//! Model providers and the small model tasks that can only take away (block, repair, ask).
//! Only this crate talks to a model endpoint.
