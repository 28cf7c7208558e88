#!/bin/sh
# layers.sh SRC_DIR -- the layers of src/ depend one way (docs/design.md): no file includes a
# header of a higher layer, the backends do not include each other, and the command-line tool
# uses the public header only. Prints every include that breaks the order.
set -eu
root=${1:?usage: layers.sh SOURCE_DIR}
cd "$root"

# The layers, bottom up; the two backends share a rank but are separate. Our own kernels sit
# beside the driver layer (they launch on its contexts), peer copies below the backends (the
# NCCL backend asks the probe which pairs work), NVSHMEM beside the world (it starts from a
# communicator or the launch environment).
rank() {
  case "$1" in
    base/*) echo 0 ;; loader/*) echo 1 ;; device/*|kernels/*) echo 2 ;; core/*) echo 3 ;;
    p2p/*) echo 4 ;; backend/*) echo 5 ;; boot/*) echo 6 ;; world/*|shmem/*) echo 7 ;;
    *) echo x ;;
  esac
}

bad=0
for f in $(cd src && find . -name '*.[ch]' | sed 's@^\./@@' | sort); do
  own=$(rank "$f")
  for inc in $(sed -n 's@^#include "\([^"]*\)".*@\1@p' "src/$f"); do
    [ "$inc" = mgcomm.h ] && continue
    dep=$(rank "$inc")
    if [ "$own" = x ] || [ "$dep" = x ]; then
      echo "src/$f includes $inc: a folder that is not a layer"; bad=1
    elif [ "$dep" -gt "$own" ]; then
      echo "src/$f (layer $own) includes $inc (layer $dep), a higher layer"; bad=1
    elif case "$f" in backend/*) true ;; *) false ;; esac &&
         case "$inc" in backend/*) true ;; *) false ;; esac &&
         [ "$(echo "$f" | cut -d/ -f2)" != "$(echo "$inc" | cut -d/ -f2)" ]; then
      echo "src/$f includes $inc: a backend includes another backend"; bad=1
    fi
  done
done
for f in $(find tools -name '*.[ch]' | sort); do
  for inc in $(sed -n 's@^#include "\([^"]*\)".*@\1@p' "$f"); do
    case "$inc" in */*) echo "$f includes $inc: the tool uses the public header only"; bad=1 ;; esac
  done
done
[ "$bad" = 0 ] && echo "layers: every include goes down (base < loader < device, kernels < core < p2p < backend < boot < world, shmem)"
exit "$bad"
