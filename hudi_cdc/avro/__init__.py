"""Avro change events in the Confluent wire format, decoded into the JSON path's input."""
