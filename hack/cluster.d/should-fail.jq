# jq (gojq) expression evaluated by kwok on a Running pod: true when the pod
# should end Failed instead of Succeeded.  hack/cluster drops the comment
# lines, joins the rest into one line and puts it into kwok.yaml.
#
# - If any jobset-test/fail-if-* annotation is present, the pod fails when
#   every present one matches: its value is a comma-separated list and must
#   contain the pod's restart attempt / job restart attempt (RestartJob
#   gate, default "0") / job index / completion index.
# - Otherwise it fails when jobset-test/exit-code is present and not "0".
(.metadata.annotations // {}) as $a
| (.metadata.labels // {}) as $l
| [ ["jobset-test/fail-if-restart-attempt",
     ($l["jobset.sigs.k8s.io/restart-attempt"] // $a["jobset.sigs.k8s.io/restart-attempt"] // "0")],
    ["jobset-test/fail-if-job-restart-attempt",
     ($l["jobset.sigs.k8s.io/job-restart-attempt"] // $a["jobset.sigs.k8s.io/job-restart-attempt"] // "0")],
    ["jobset-test/fail-if-job-index",
     ($l["jobset.sigs.k8s.io/job-index"] // $a["jobset.sigs.k8s.io/job-index"] // "")],
    ["jobset-test/fail-if-completion-index",
     ($a["batch.kubernetes.io/job-completion-index"] // "")] ]
| map(select($a[.[0]] != null)) as $c
| if ($c | length) > 0
  then ($c | all(. as $p | $a[$p[0]] | split(",") | any(. == $p[1])))
  else (($a["jobset-test/exit-code"] // "0") != "0")
  end
