-- expect: DP101
;
