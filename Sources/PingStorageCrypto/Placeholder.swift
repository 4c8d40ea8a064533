// AES-256-GCM and the envelope format live here.
