#!/usr/bin/env python3
"""Greedy continuations from HF transformers running a GGUF model dequantized to f32 (the
exact-math reference). Reads /tmp/prompt_ids.json ([{prompt, ids}], made with llama.cpp's
tokenizer in compare_llama_cpp.py), writes /tmp/hf_greedy.json. Run by hand with the reference venv."""
import torch, json, os, sys
from transformers import AutoModelForCausalLM
model=AutoModelForCausalLM.from_pretrained(os.path.abspath('models'), gguf_file='gemma-3-270m-q4_k_m.gguf', torch_dtype=torch.float32, attn_implementation='eager').eval()
prompts=json.load(open('/tmp/prompt_ids.json'))
out=[]
with torch.no_grad():
    for p in prompts:
        ids=torch.tensor([p['ids']])
        g=model.generate(ids, max_new_tokens=32, do_sample=False, eos_token_id=[1,106])
        out.append(g[0, len(p['ids']):].tolist())
json.dump(out, open('/tmp/hf_greedy.json','w')); print('ok')
