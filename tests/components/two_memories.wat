;; Hostile test tool `two_memories`, written by hand: a component of two core modules,
;; each with its own linear memory (no Rust guest has two). Its declared memory limit
;; is 4 MiB. `handle` grows the second module's memory, then the main one's, by 48
;; pages (3 MiB) each when its arguments are `{}` — each memory alone stays under the
;; limit, both together do not — or by 16 pages each for any longer arguments (2.1 MiB
;; in all: the legitimate twin). A refused growth traps, as a Rust guest that runs out
;; of memory aborts.
(component
  (core module $second
    (memory (export "memory") 1)
    (func (export "grow") (param $pages i32) (result i32)
      (memory.grow (local.get $pages))))
  (core instance $second (instantiate $second))

  (core module $main
    (import "second" "grow" (func $grow_second (param i32) (result i32)))
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 4096))
    (data (i32.const 256) "{\"name\":\"two_memories\",\"description\":\"Grows two memories\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}")
    (data (i32.const 1024) "{\"grew\":true}")
    ;; A bump allocator: enough for the few strings the host writes per call.
    (func (export "realloc") (param i32 i32) (param $align i32) (param $size i32) (result i32)
      (local $at i32)
      (local.set $at
        (i32.and
          (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
          (i32.sub (i32.const 0) (local.get $align))))
      (global.set $heap (i32.add (local.get $at) (local.get $size)))
      (local.get $at))
    (func (export "schema") (result i32)
      (i32.store (i32.const 16) (i32.const 256))
      (i32.store (i32.const 20) (i32.const 105))
      (i32.const 16))
    (func (export "check") (result i32)
      (i32.const 1))
    (func (export "handle")
      (param $args i32) (param $args_len i32)
      (param i32 i32 i32 i32 i32 i32)
      (result i32)
      (local $pages i32)
      (local.set $pages
        (select (i32.const 16) (i32.const 48)
          (i32.gt_u (local.get $args_len) (i32.const 2))))
      (if (i32.lt_s (call $grow_second (local.get $pages)) (i32.const 0))
        (then unreachable))
      (if (i32.lt_s (memory.grow (local.get $pages)) (i32.const 0))
        (then unreachable))
      ;; result<string, string>: ok (0), then the string's pointer and length.
      (i32.store8 (i32.const 32) (i32.const 0))
      (i32.store (i32.const 36) (i32.const 1024))
      (i32.store (i32.const 40) (i32.const 13))
      (i32.const 32))
    (@custom "hermetic:declaration" "name = \"two_memories\"\ntoolset = \"test\"\nmemory_mb = 4\n"))
  (core instance $main (instantiate $main (with "second" (instance $second))))
  (alias core export $main "memory" (core memory $memory))
  (alias core export $main "realloc" (core func $realloc))

  (type $context (record (field "call-id" string) (field "tenant" string) (field "session" string)))
  (export $call_context "call-context" (type $context))
  (func $schema (result string)
    (canon lift (core func $main "schema") (memory $memory) (realloc $realloc)))
  (func $check (result bool)
    (canon lift (core func $main "check")))
  (func $handle (param "args" string) (param "ctx" $call_context) (result (result string (error string)))
    (canon lift (core func $main "handle") (memory $memory) (realloc $realloc)))
  (instance $tool
    (export "call-context" (type $call_context))
    (export "schema" (func $schema))
    (export "check" (func $check))
    (export "handle" (func $handle)))
  (export "hermetic:tool/tool@0.3.0" (instance $tool)))
