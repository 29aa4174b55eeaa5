"""BoundQuery -> Plan: mechanisms, sensitivities from the policy, and the (epsilon, delta) split."""
