#!/bin/sh
# The timelines' Redis Cluster of the `scale` profile (docker-compose.yml): three masters,
# one replica each, from the six nodes named in REDIS_CLUSTER_NODES (host:port, spaces
# between). Run by the redis-cluster-create job; safe to run again: a cluster already
# serving every slot is left as it is.
set -eu
first=${REDIS_CLUSTER_NODES%% *}
host=${first%:*}
port=${first#*:}
if redis-cli -h "$host" -p "$port" cluster info | grep -q '^cluster_state:ok'; then
  echo "the cluster serves every slot already"
  exit 0
fi
# redis-cli --cluster create takes addresses: each node's, as Docker's DNS resolves it now
# (the nodes announce their host names to clients, so a node that restarts on a new
# address is still found).
addresses=""
for node in $REDIS_CLUSTER_NODES; do
  address=$(getent hosts "${node%:*}" | awk '{print $1; exit}')
  addresses="$addresses $address:${node#*:}"
done
# shellcheck disable=SC2086 # one argument per node
redis-cli --cluster create $addresses --cluster-replicas 1 --cluster-yes
until redis-cli -h "$host" -p "$port" cluster info | grep -q '^cluster_state:ok'; do
  sleep 1
done
echo "the cluster serves every slot"
