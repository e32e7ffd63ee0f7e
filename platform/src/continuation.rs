//! Continuing a JS promise with a plain Rust function, without a future.
//!
//! The relay's ingest path (bench target 4) waits on two promises per
//! request: the body, then the queue send. Awaited as `JsFuture`s inside an
//! `async` export, each wait costs two fresh closures (each registered with,
//! and later removed from, wasm-bindgen's FinalizationRegistry) and a
//! queued microtask before the future is polled again, and the export adds
//! a promise, a task and one more microtask. A V8 profile put that
//! scheduling at about 135 µs of a request, more than the HMAC. A
//! [`Continuation`] is made once per isolate; each use binds its arguments
//! (`Function.prototype.bind`, native) and calls `then`, which is what a
//! hand-written JS worker pays for the same wait.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A JS function, seen only for `bind`.
    type Callable;

    #[wasm_bindgen(method, js_name = bind)]
    fn bind_four(
        this: &Callable,
        this_arg: &JsValue,
        a: &JsValue,
        b: &JsValue,
        c: &JsValue,
        d: &JsValue,
    ) -> Callable;

    /// A promise, seen only for the two-callback `then`.
    type Thenable;

    #[wasm_bindgen(method, js_name = then)]
    fn then_both(this: &Thenable, on_ok: &Callable, on_err: &Callable) -> Promise;
}

/// The four values a step carries from one promise to the next (JS values,
/// so they live as long as the promise needs them, with no Rust state left
/// behind if it never settles).
pub type Carried = [JsValue; 4];

/// What happens when the promise settles: the settled value or rejection,
/// to the next value (a response, or a promise of one; an `Err` rejects).
pub type Step = fn(Carried, Result<JsValue, JsValue>) -> Result<JsValue, JsValue>;

type Callback =
    Closure<dyn Fn(JsValue, JsValue, JsValue, JsValue, JsValue) -> Result<JsValue, JsValue>>;

/// A [`Step`] as the pair of JS functions `then` takes, made once.
pub struct Continuation {
    on_ok: Callback,
    on_err: Callback,
}

impl Continuation {
    /// Wraps `step`; keep the result for the isolate's life (a
    /// `thread_local`), since every use borrows its functions.
    pub fn new(step: Step) -> Self {
        Self {
            on_ok: Closure::new(move |a, b, c, d, value| step([a, b, c, d], Ok(value))),
            on_err: Closure::new(move |a, b, c, d, error| step([a, b, c, d], Err(error))),
        }
    }

    /// `promise.then(v => step(carried, Ok(v)), e => step(carried, Err(e)))`.
    pub fn after(&self, promise: &Promise, carried: &Carried) -> Promise {
        let [a, b, c, d] = carried;
        let bound = |f: &Callback| {
            f.as_ref()
                .unchecked_ref::<Callable>()
                .bind_four(&JsValue::NULL, a, b, c, d)
        };
        promise
            .unchecked_ref::<Thenable>()
            .then_both(&bound(&self.on_ok), &bound(&self.on_err))
    }
}
