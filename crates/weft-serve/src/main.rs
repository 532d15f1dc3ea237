//! `weft serve`: see `weft serve --help` and crates/weft-serve/src/lib.rs.

use std::sync::Arc;
use weft_serve::cli::{self, USAGE};
use weft_serve::engine::EngineConfig;
use weft_serve::{embed::Embedder, find, server::App};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        return Err(USAGE.to_string());
    }
    let mut o = cli::parse(&args[1..])?;
    if o.models.is_empty() {
        o.models.push(("SmolLM2-135M-Instruct".into(), find::smollm2()?));
    }
    let t0 = std::time::Instant::now();
    let models = o
        .models
        .iter()
        .map(|(n, p)| weft_serve::load_model(n, p)?.with_int8_activations(o.int8).placed(o.device, o.dtype()))
        .collect::<Result<Vec<_>, _>>()?;
    let embedder = match &o.embedding {
        Some((n, d)) => Some(Arc::new(Embedder::load(n, d, o.device)?)),
        None => None,
    };
    let config = EngineConfig { parallel: o.parallel, max_queue: o.max_queue, ctx: o.ctx, prefill_chunk: o.prefill_chunk, device: o.device };
    let engines = weft_serve::start_engines(models, &config)?;
    let names: Vec<String> = engines.iter().map(|e| format!("{} (ctx {})", e.model.name, e.config.ctx)).collect();
    let app = Arc::new(App::new(engines, embedder, o.api_key.clone(), o.keep_alive));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let addr = format!("{}:{}", o.host, o.port);
        let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| format!("binding {addr}: {e}"))?;
        eprintln!(
            "weft serve: {} on http://{addr} in {:.1} s ({} parallel, queue {}); Ctrl-C stops",
            names.join(", "),
            t0.elapsed().as_secs_f64(),
            o.parallel,
            o.max_queue
        );
        weft_serve::serve(listener, app, shutdown_signal(), o.shutdown_grace).await.map_err(|e| e.to_string())
    })?;
    eprintln!("weft serve: stopped");
    Ok(())
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let int = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = int => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = int.await;
    }
    eprintln!("weft serve: shutting down (finishing running requests)");
}
