# Core services: status table, dtype table, parameters.
