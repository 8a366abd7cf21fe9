"""The sections of `params.yaml`, one module each (`medsimp.sections.filter` is params `filter`),
composed by `medsimp.params_schema`."""
