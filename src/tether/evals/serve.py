"""``python -m tether.evals.serve --model SPEC --port P``: what ``tether serve`` runs (the same
``create_app``, packs and uvicorn), with the eval's choice of model, metered. SPEC: ``planner`` or
``openai`` (the ``TETHER_MODEL_*`` settings), ``adversarial``, ``reference:<calls.json>``, or
``module:factory`` for a model of your own (the tests' scripted models).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import uvicorn

from tether.app.main import create_app
from tether.evals.models import AdversarialModel, MeteredModel, custom_model, reference_model
from tether.pack import PackEnv, load_packs
from tether.settings import create_settings
from tether.wiring import build_model, check_schemas


def build(spec: str, settings: Any, packs: list[Any]) -> Any:
    if spec in ("planner", "openai"):
        return build_model(settings.model_copy(update={"model": spec}), packs)
    if spec == "adversarial":  # on Tryton the runner names its forms' ids (they are Tryton's ir.model ids)
        forms = os.environ.get("TETHER_EVAL_ADVERSARY_FORMS", "")
        return AdversarialModel(tuple(f for f in forms.split(",") if f))
    if spec.startswith("reference:"):
        return reference_model(spec.removeprefix("reference:"))
    return custom_model(spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tether.evals.serve")
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args(argv)
    settings = create_settings()
    packs = load_packs(settings.pack_refs, PackEnv(settings, settings.public_url.rstrip("/")))
    model = MeteredModel(build(args.model, settings, packs), Path.cwd())
    app = create_app(settings, model=model, packs=packs)
    check_schemas(app.state.services)
    uvicorn.run(app, host=args.host, port=args.port, log_level=settings.log_level.lower(), timeout_graceful_shutdown=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
