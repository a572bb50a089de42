# normalize.jq - the effective configuration of a project's containers, from
# `docker inspect` of all of them, keyed by service, so that two projects
# created from one compose file by different tools compare field by field.
#
#   docker inspect C... | jq -S --arg project P -f normalize.jq
#
# Kept: Config, HostConfig, network endpoints (aliases, addresses, links)
# and the mounts as the Engine made them.  Removed, because they only carry
# the project or the container's identity: the project's labels
# (com.docker.compose.*, io.profharness.*), names and ids (replaced by
# <service> and PROJECT), the container's own alias and generated hostname,
# anonymous volume names.  Evened out, because both forms mean the same to
# the Engine: null and empty lists or maps, restart policy "" and "no".
# Left out, because the same mounts can be asked for two ways: HostConfig
# Binds and Mounts, Config.Volumes (the Mounts below are what was made).
# docker-compose 1.29 and compose v2 differ in two things left out here
# (docs/compose.md lists them): AttachStdout/AttachStderr, and the
# separator in link aliases (db_1 or db-1).

def service_of: .Config.Labels["com.docker.compose.service"] // .Config.Labels["io.profharness.service"];

. as $all
| ([$all[] | {key: .Id, value: service_of}] + [$all[] | {key: .Id[0:12], value: service_of}]
   + [$all[] | {key: (.Name | ltrimstr("/")), value: service_of}]
   | sort_by(-(.key | length)) ) as $who
| def ref:
    if type == "string" then
      (reduce $who[] as $e (.; gsub($e.key; "<" + $e.value + ">")))
      | gsub($project; "PROJECT")
      | gsub("PROJECT[_-](?<s>[a-z0-9]+)[_-]1"; "PROJECT-\(.s)-N")
      | gsub("(?<p>[/:])(?<s>[a-z0-9]+)[_-]1$"; "\(.p)\(.s)-N")
    else . end;
  def nonull(d): if . == null then d else . end;
  map(. as $c
    | {key: service_of,
       value: {
         Config: ($c.Config | {
           Cmd, Entrypoint, Env: (.Env | nonull([]) | sort), WorkingDir, User, Domainname, Image,
           Hostname: (if .Hostname == ($c.Id[0:12]) then null else .Hostname end),
           ExposedPorts: (.ExposedPorts | nonull({}) | keys), Tty, OpenStdin, StdinOnce, StopSignal, StopTimeout,
           Healthcheck,
           Labels: (.Labels | nonull({}) | with_entries(select(.key | test("^(com\\.docker\\.compose|io\\.profharness)\\.") | not)))
         }),
         HostConfig: ($c.HostConfig | {
           CapAdd: (.CapAdd | nonull([]) | sort), CapDrop: (.CapDrop | nonull([]) | sort),
           Dns: (.Dns | nonull([])), DnsOptions: (.DnsOptions | nonull([])), DnsSearch: (.DnsSearch | nonull([])),
           ExtraHosts: (.ExtraHosts | nonull([]) | sort), GroupAdd: (.GroupAdd | nonull([])),
           IpcMode, PidMode, Init, Links: (.Links | nonull([]) | sort), LogConfig,
           Memory, MemorySwap, MemoryReservation, NanoCpus, CpuShares, CpuQuota, CpuPeriod, CpusetCpus, PidsLimit,
           OomScoreAdj, OomKillDisable, BlkioWeight, ShmSize, CgroupParent, UsernsMode, Runtime,
           PortBindings: (.PortBindings | nonull({})), Privileged, ReadonlyRootfs,
           RestartPolicy: (.RestartPolicy | .Name |= (if . == "" then "no" else . end)),
           SecurityOpt: (.SecurityOpt | nonull([]) | sort), Sysctls: (.Sysctls | nonull({})),
           Tmpfs: (.Tmpfs | nonull({})), Ulimits: (.Ulimits | nonull([]) | sort_by(.Name)),
           Devices: (.Devices | nonull([])), NetworkMode, VolumesFrom: (.VolumesFrom | nonull([]))
         }),
         Networks: ($c.NetworkSettings.Networks | nonull({}) | with_entries(.key |= ref | .value |= {
           Aliases: (.Aliases | nonull([])
                     | map(select(. != ($c.Id[0:12]) and . != ($c.Name | ltrimstr("/")))) | sort),
           IPAMConfig: (.IPAMConfig | if . == null or . == {} then null else . end),
           Links: (.Links | nonull([]) | sort)
         })),
         Mounts: ($c.Mounts | nonull([]) | map({
           Type, Destination, RW, Propagation,
           Name: (if (.Name // "") | test("^[0-9a-f]{64}$") then "anonymous" else .Name end),
           Source: (if .Type == "volume" then null else .Source end)
         }) | sort_by(.Destination))
       }})
  | from_entries
  | walk(ref)
