#!/usr/bin/env bash
# Regenerates Tests/Fixtures/sentencepiece/ (models trained by, and ids from, the `sentencepiece`
# package of PyPI) in a private venv with pinned versions — the reference for Hearth's pure-Swift
# SentencePiece (Tests/HearthTokenizersTests/SentencePieceReferenceTests.swift). Run by hand from
# any directory; the outputs are committed. Trains five models (one of 32,000 pieces): a few
# minutes on one core.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
venv=".build/sentencepiece-venv"
private_venv "$venv" sentencepiece==0.2.3 protobuf==7.36.2
"$venv/bin/python" scripts/make_sentencepiece_fixtures.py "$@"
