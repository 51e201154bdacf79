#!/usr/bin/env python3
"""Exact-math reference for a GGUF model: HF transformers loads the same GGUF (dequantized
to f32) and scores 513 tokens teacher-forced. Run by hand with the reference venv (needs
transformers, torch, gguf, accelerate):

    benchmarks/.venv/bin/python -c '...'   # writes /tmp/ids513.json (see compare_llama_cpp.py)
    /opt/hearth-ref/bin/python scripts/transformers_gguf_reference.py MODEL_DIR GGUF_NAME IDS.json OUT.json

OUT.json holds, per position, the argmax and the log-probability of the next token, the
same fields `hearth perplexity --per-token` writes, so both engines can be scored against it.
"""
import sys
import torch, json, numpy as np, os
from transformers import AutoModelForCausalLM
M=os.path.abspath(sys.argv[1])
model=AutoModelForCausalLM.from_pretrained(M, gguf_file=sys.argv[2], torch_dtype=torch.float32, attn_implementation='eager')
model.eval()
ids=json.load(open(sys.argv[3]))
with torch.no_grad():
    logits=model(torch.tensor([ids])).logits[0].double()
lp=torch.log_softmax(logits,-1)
out=[{'argmax':int(logits[i].argmax()),'logprob':float(lp[i,ids[i+1]])} for i in range(512)]
json.dump(out, open(sys.argv[4],'w'))
print('done')
