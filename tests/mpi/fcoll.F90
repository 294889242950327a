! SPDX-License-Identifier: LGPL-2.1-or-later
! fcoll.F90 - the collectives libzcrecv-mpi carries, called from Fortran
! (mpif.h; built with -DZC_USE_MPI, the `use mpi` module), each checked
! against the MPI's own result: the same call through PMPI_* from C
! (fcoll_ref.c), on the same data. MPI_Alltoall(v,w), Allgather(v), Bcast,
! Gather(v), Scatter(v), Reduce, Allreduce, Reduce_scatter(_block), Scan,
! Exscan, Barrier and the nonblocking Ialltoall, Iallgather, Ibcast,
! Iallreduce and Ibarrier, with random sizes (0 to 64 Ki elements), roots,
! datatypes (INTEGER, 2INTEGER, a contiguous and a strided derived type;
! per part in Alltoallw, zero counts included) and reduction operations
! (every predefined one on INTEGER, INTEGER8, REAL, DOUBLE PRECISION,
! COMPLEX, DOUBLE COMPLEX, LOGICAL and the pair types where MPI defines it,
! and Fortran user operations, commutative and not), MPI_IN_PLACE where
! MPI allows it, on MPI_COMM_WORLD, a dup, a split and a reordered split,
! with point-to-point traffic of the program (a wildcard receive too) in
! flight across every batch. The seed is the first argument (default 33),
! agreed by rank 0. Rank 0 prints "fcoll: N checks passed"; a wrong
! result prints what and where and aborts the job.
! Run by tests/mpi/check-zcmpi.sh with and without the layer.
program fcoll
#ifdef ZC_USE_MPI
  use mpi
#endif
  use, intrinsic :: iso_c_binding
  implicit none
#ifndef ZC_USE_MPI
  include 'mpif.h'
#endif
  integer :: ierr, wrank, wsize, checks, total, ci, it, seed, nargs
  integer :: comms(4), dtys(4), ipe(4), isz(4), tv, tc, tstr
  integer :: rtys(10), opc, opnc
  integer :: ops(14)
  integer(8) :: rng
  character(len=32) :: arg
  external :: ucomm, unc

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, wrank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, wsize, ierr)
  seed = 33
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) seed
  end if
  call ref_bcast(seed, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  rng = 1 + mod(int(seed, 8), 2147483646_8)
  checks = 0

  ! Datatypes of the moving collectives, all over INTEGER storage: ipe
  ! INTEGERs of extent an element, isz of them data.
  call mpi_type_contiguous(3, MPI_INTEGER, tc, ierr)
  call mpi_type_commit(tc, ierr)
  call mpi_type_vector(2, 1, 2, MPI_INTEGER, tv, ierr)
  call mpi_type_create_resized(tv, 0_MPI_ADDRESS_KIND, &
                               16_MPI_ADDRESS_KIND, tstr, ierr)
  call mpi_type_free(tv, ierr)
  call mpi_type_commit(tstr, ierr)
  dtys = (/ MPI_INTEGER, MPI_2INTEGER, tc, tstr /)
  ipe = (/ 1, 2, 3, 4 /)
  isz = (/ 1, 2, 3, 2 /)

  rtys = (/ MPI_INTEGER, MPI_INTEGER8, MPI_REAL, MPI_DOUBLE_PRECISION, &
            MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_LOGICAL, MPI_2INTEGER, &
            MPI_2REAL, MPI_2DOUBLE_PRECISION /)
  call mpi_op_create(ucomm, .true., opc, ierr)
  call mpi_op_create(unc, .false., opnc, ierr)
  ops = (/ MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, &
           MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MINLOC, MPI_MAXLOC, &
           opc, opnc /)

  comms(1) = MPI_COMM_WORLD
  call mpi_comm_dup(MPI_COMM_WORLD, comms(2), ierr)
  call mpi_comm_split(MPI_COMM_WORLD, mod(wrank, 2), wrank, comms(3), ierr)
  call mpi_comm_split(MPI_COMM_WORLD, 0, wsize - wrank, comms(4), ierr)

  do ci = 1, 4
    do it = 1, 3
      call batch(comms(ci), it)
    end do
  end do

  call mpi_barrier(comms(2), ierr)
  call mpi_comm_free(comms(2), ierr)
  call mpi_comm_free(comms(3), ierr)
  call mpi_comm_free(comms(4), ierr)
  call mpi_op_free(opc, ierr)
  call mpi_op_free(opnc, ierr)
  call mpi_type_free(tc, ierr)
  call mpi_type_free(tstr, ierr)
  call ref_allreduce(checks, total, 1, MPI_INTEGER, MPI_SUM, &
                     MPI_COMM_WORLD, ierr)
  if (wrank == 0) print '(a,i0,a,i0)', 'fcoll: ', total, &
      ' checks passed, seed ', seed
  call mpi_finalize(ierr)

contains

  ! 0 .. m - 1, the same sequence on every rank (Park-Miller).
  integer function rnd(m)
    integer, intent(in) :: m
    rng = mod(rng * 48271_8, 2147483647_8)
    rnd = int(mod(rng, int(max(m, 1), 8)))
  end function rnd

  ! A value no other (rank, part, index) gives.
  integer function val(r, part, k)
    integer, intent(in) :: r, part, k
    val = r * 1000003 + part * 10007 + k
  end function val

  ! A small value of rank r at index k: sums and products exact.
  integer function small(r, k, sd)
    integer, intent(in) :: r, k, sd
    integer(8) :: h
    h = mod(int(k, 8) * 7919_8 + int(r, 8) * 104729_8 + int(sd, 8) * 31_8, &
            1000003_8)
    small = int(mod(h * h + 7_8 * h, 5_8)) - 2
  end function small

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,i0,2a)', 'fcoll: rank ', wrank, ': wrong result: ', what
    call mpi_abort(MPI_COMM_WORLD, 2, ierr)
  end subroutine fail

  ! n INTEGERs of a and b agree.
  subroutine same(a, b, n, what)
    integer, intent(in) :: a(*), b(*), n
    character(len=*), intent(in) :: what
    integer :: k
    checks = checks + 1
    do k = 1, n
      if (a(k) /= b(k)) then
        print '(a,i0,a,i0,a,i0,a,i0)', 'fcoll: at ', k, ' of ', n, ': ', &
            a(k), ' against ', b(k)
        call fail(what)
      end if
    end do
  end subroutine same

  ! Complete request req by one of the completion calls (how, modulo 5),
  ! beside the null request; it must come back null.
  subroutine complete(req, how)
    integer, intent(inout) :: req
    integer, intent(in) :: how
    integer :: two(2), idx, n, outs(2), st(MPI_STATUS_SIZE)
    integer :: sts(MPI_STATUS_SIZE, 2)
    logical :: flag
    two(1) = MPI_REQUEST_NULL
    two(2) = req
    flag = .false.
    select case (mod(how, 5))
    case (0)
      call mpi_wait(req, st, ierr)
    case (1)
      do while (.not. flag)
        call mpi_test(req, flag, MPI_STATUS_IGNORE, ierr)
      end do
    case (2)
      call mpi_waitall(2, two, sts, ierr)
      req = two(2)
    case (3)
      call mpi_waitany(2, two, idx, st, ierr)
      if (idx /= 2) call fail('waitany index')
      req = two(2)
    case default
      call mpi_waitsome(2, two, n, outs, sts, ierr)
      if (n /= 1 .or. outs(1) /= 2) call fail('waitsome')
      req = two(2)
    end select
    checks = checks + 1
    if (req /= MPI_REQUEST_NULL) call fail('request not null')
  end subroutine complete

  ! One batch on comm: point-to-point in flight (tags 0..3 to the next
  ! rank, a wildcard receive) across one call of every collective.
  subroutine batch(comm, it)
    integer, intent(in) :: comm, it
    integer :: r, p, t, n, ti, left, right, v
    integer :: req(9), in(4), out(4), any, sts(MPI_STATUS_SIZE, 9)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    left = mod(r + p - 1, p)
    right = mod(r + 1, p)
    do t = 0, 3
      in(t + 1) = -1
      call mpi_irecv(in(t + 1), 1, MPI_INTEGER, left, t, comm, req(t + 1), &
                     ierr)
    end do
    call mpi_irecv(any, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &
                   req(9), ierr)
    do t = 0, 3
      out(t + 1) = val(r, t, 77)
      call mpi_isend(out(t + 1), 1, MPI_INTEGER, right, t, comm, &
                     req(5 + t), ierr)
    end do

    ! Sizes 0 to 2^16 elements (a part up to 1 MiB), mostly small.
    n = rnd(2 ** rnd(17))
    if (it == 1) n = 0
    ti = 1 + rnd(4)
    call alltoall(comm, n, ti)
    call alltoallv(comm, n, ti)
    call alltoallw(comm, n)
    call allgather(comm, n, 1 + rnd(4))
    call allgatherv(comm, n, 1 + rnd(4))
    call bcast(comm, n, 1 + rnd(4), rnd(p))
    call rooted(comm, n, 1 + rnd(4), rnd(p))
    call reductions(comm, n)
    call reductions(comm, rnd(40))
    call nonblocking(comm, n, 1 + rnd(4))
    if (it == 2) call barriers(comm)

    v = 0
    call mpi_send(v, 1, MPI_INTEGER, right, 99, comm, ierr)
    call mpi_waitall(9, req, sts, ierr)
    do t = 0, 3
      checks = checks + 1
      if (in(t + 1) /= val(left, t, 77)) call fail('point-to-point')
    end do
    checks = checks + 1
    if (sts(MPI_SOURCE, 9) /= left .or. sts(MPI_TAG, 9) /= 99) &
        call fail('wildcard took a collective''s message')
  end subroutine batch

  subroutine alltoall(comm, n, ti)
    integer, intent(in) :: comm, n, ti
    integer :: r, p, i, k, m, t
    integer, allocatable :: s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    m = n * ipe(ti)
    allocate (s(max(1, p * m)), a(max(1, p * m)), b(max(1, p * m)))
    do i = 0, p - 1
      do k = 1, m
        s(i * m + k) = val(r, i, k)
      end do
    end do
    a = -7
    b = -7
    call mpi_alltoall(s, n, t, a, n, t, comm, ierr)
    call ref_alltoall(0, s, n, t, b, n, t, comm, ierr)
    call same(a, b, p * m, 'alltoall')
    a = s
    b = s
    call mpi_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm, &
                      ierr)
    call ref_alltoall(1, s, 0, MPI_DATATYPE_NULL, b, n, t, comm, ierr)
    call same(a, b, p * m, 'alltoall in place')
  end subroutine alltoall

  ! Part from rank f to rank t: uneven, some empty.
  integer function vcount(f, t, n)
    integer, intent(in) :: f, t, n
    if (mod(f + 2 * t, 3) == 1) then
      vcount = 0
    else
      vcount = n + 5 * f + t
    end if
  end function vcount

  ! Parts of vcount(i, key, n) elements from every rank i, laid out in
  ! reverse rank order with gap elements after each: counts rc,
  ! displacements rd, tot elements in all.
  subroutine rlayout(p, key, n, gap, rc, rd, tot)
    integer, intent(in) :: p, key, n, gap
    integer, intent(out) :: rc(p), rd(p), tot
    integer :: i
    tot = 0
    do i = p, 1, -1
      rc(i) = vcount(i - 1, key, n)
      rd(i) = tot
      tot = tot + rc(i) + gap
    end do
  end subroutine rlayout

  subroutine alltoallv(comm, n, ti)
    integer, intent(in) :: comm, n, ti
    integer :: r, p, i, k, sn, rn, t, e
    integer, allocatable :: sc(:), sd(:), rc(:), rd(:), s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    e = ipe(ti)
    allocate (sc(p), sd(p), rc(p), rd(p))
    ! Gaps of 3 elements between parts, receive parts in reverse order.
    sn = 0
    do i = 1, p
      sc(i) = vcount(r, i - 1, n)
      sd(i) = sn
      sn = sn + sc(i) + 3
    end do
    call rlayout(p, r, n, 3, rc, rd, rn)
    allocate (s(sn * e), a(rn * e), b(rn * e))
    do k = 1, sn * e
      s(k) = val(r, 1, k)
    end do
    a = -7
    b = -7
    call mpi_alltoallv(s, sc, sd, t, a, rc, rd, t, comm, ierr)
    call ref_alltoallv(0, s, sc, sd, t, b, rc, rd, t, comm, ierr)
    call same(a, b, rn * e, 'alltoallv')
    deallocate (a, b)
    ! In place: one count per pair both ways.
    rn = 0
    do i = 1, p
      if (mod(r + i - 1, 3) == 0) then
        rc(i) = 0
      else
        rc(i) = n + r + i - 1
      end if
      rd(i) = rn
      rn = rn + rc(i) + 1
    end do
    allocate (a(rn * e), b(rn * e))
    do k = 1, rn * e
      a(k) = val(r, 2, k)
    end do
    b = a
    call mpi_alltoallv(MPI_IN_PLACE, sc, sd, MPI_DATATYPE_NULL, a, rc, rd, &
                       t, comm, ierr)
    call ref_alltoallv(1, s, sc, sd, MPI_DATATYPE_NULL, b, rc, rd, t, &
                       comm, ierr)
    call same(a, b, rn * e, 'alltoallv in place')
  end subroutine alltoallv

  ! A type for the part between ranks f and t, side w (0: send, 1: receive).
  integer function wtype(f, t, w)
    integer, intent(in) :: f, t, w
    wtype = 1 + mod(f * 3 + t + 5 * w + 2 * w * t, 4)
  end function wtype

  ! Alltoallw: every part its own type on each side (the same INTEGERs,
  ! 6 m of them: a whole number of elements of every type), some empty;
  ! displacements in bytes. In place: parts of m(r, i) = m(i, r).
  subroutine alltoallw(comm, n)
    integer, intent(in) :: comm, n
    integer :: r, p, i, k, sn, rn, x, q
    integer, allocatable :: sc(:), sd(:), st(:), rc(:), rd(:), rt(:)
    integer, allocatable :: s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    q = 6 * (n / 6 + 1)
    allocate (sc(p), sd(p), st(p), rc(p), rd(p), rt(p))
    sn = 0
    rn = 0
    do i = 1, p
      x = wtype(r, i - 1, 0)
      st(i) = dtys(x)
      sc(i) = vcount(r, i - 1, q) / 6 * 6 / isz(x)
      sd(i) = 4 * sn
      sn = sn + sc(i) * ipe(x) + 2
      x = wtype(i - 1, r, 1)
      rt(i) = dtys(x)
      rc(i) = vcount(i - 1, r, q) / 6 * 6 / isz(x)
    end do
    do i = p, 1, -1
      x = wtype(i - 1, r, 1)
      rd(i) = 4 * rn
      rn = rn + rc(i) * ipe(x) + 1
    end do
    allocate (s(max(sn, 1)), a(max(rn, 1)), b(max(rn, 1)))
    do k = 1, sn
      s(k) = val(r, 3, k)
    end do
    a = -7
    b = -7
    call mpi_alltoallw(s, sc, sd, st, a, rc, rd, rt, comm, ierr)
    call ref_alltoallw(0, s, sc, sd, st, b, rc, rd, rt, comm, ierr)
    call same(a, b, rn, 'alltoallw')
    deallocate (a, b)
    rn = 0
    do i = 1, p
      x = wtype(r, i - 1, 1)
      rt(i) = dtys(x)
      if (mod(r + i - 1, 3) == 1) then
        rc(i) = 0
      else
        rc(i) = (q + 6 * (r + i - 1)) / isz(x)
      end if
      rd(i) = 4 * rn
      rn = rn + rc(i) * ipe(x) + 1
    end do
    allocate (a(rn), b(rn))
    do k = 1, rn
      a(k) = val(r, 4, k)
    end do
    b = a
    call mpi_alltoallw(MPI_IN_PLACE, sc, sd, st, a, rc, rd, rt, comm, ierr)
    call ref_alltoallw(1, s, sc, sd, st, b, rc, rd, rt, comm, ierr)
    call same(a, b, rn, 'alltoallw in place')
  end subroutine alltoallw

  subroutine allgather(comm, n, ti)
    integer, intent(in) :: comm, n, ti
    integer :: r, p, k, m, t
    integer, allocatable :: s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    m = n * ipe(ti)
    allocate (s(max(1, m)), a(max(1, p * m)), b(max(1, p * m)))
    do k = 1, m
      s(k) = val(r, 5, k)
    end do
    a = -7
    b = -7
    call mpi_allgather(s, n, t, a, n, t, comm, ierr)
    call ref_allgather(0, s, n, t, b, n, t, comm, ierr)
    call same(a, b, p * m, 'allgather')
    do k = 1, p * m
      a(k) = val(r, 6, k)
    end do
    b = a
    call mpi_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm, &
                       ierr)
    call ref_allgather(1, s, 0, MPI_DATATYPE_NULL, b, n, t, comm, ierr)
    call same(a, b, p * m, 'allgather in place')
  end subroutine allgather

  subroutine allgatherv(comm, n, ti)
    integer, intent(in) :: comm, n, ti
    integer :: r, p, i, k, rn, t, e
    integer, allocatable :: rc(:), rd(:), s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    e = ipe(ti)
    allocate (rc(p), rd(p))
    call rlayout(p, 1, n, 2, rc, rd, rn)
    allocate (s(max(1, rc(r + 1) * e)), a(rn * e), b(rn * e))
    do k = 1, rc(r + 1) * e
      s(k) = val(r, 7, k)
    end do
    a = -7
    b = -7
    call mpi_allgatherv(s, rc(r + 1), t, a, rc, rd, t, comm, ierr)
    call ref_allgatherv(0, s, rc(r + 1), t, b, rc, rd, t, comm, ierr)
    call same(a, b, rn * e, 'allgatherv')
    do k = 1, rn * e
      a(k) = val(r, 8, k)
    end do
    b = a
    call mpi_allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, rc, rd, t, &
                        comm, ierr)
    call ref_allgatherv(1, s, 0, MPI_DATATYPE_NULL, b, rc, rd, t, comm, &
                        ierr)
    call same(a, b, rn * e, 'allgatherv in place')
  end subroutine allgatherv

  subroutine bcast(comm, n, ti, root)
    integer, intent(in) :: comm, n, ti, root
    integer :: r, k, m
    integer, allocatable :: a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    m = n * ipe(ti)
    allocate (a(max(1, m)), b(max(1, m)))
    do k = 1, m
      if (r == root) then
        a(k) = val(root, 9, k)
      else
        a(k) = -7
      end if
    end do
    b = a
    call mpi_bcast(a, n, dtys(ti), root, comm, ierr)
    call ref_bcast(b, n, dtys(ti), root, comm, ierr)
    call same(a, b, m, 'bcast')
  end subroutine bcast

  ! Gather(v) and Scatter(v) of n elements a part, to and from root, and
  ! in place at the root (against the call not in place).
  subroutine rooted(comm, n, ti, root)
    integer, intent(in) :: comm, n, ti, root
    integer :: r, p, i, k, tot, t, e
    integer, allocatable :: rc(:), rd(:), s(:), a(:), b(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    e = ipe(ti)
    allocate (rc(p), rd(p))
    call rlayout(p, 2, n, 3, rc, rd, tot)
    tot = max(tot, p * n, 1)
    allocate (s(tot * e), a(tot * e), b(tot * e))
    do k = 1, tot * e
      s(k) = val(r, 10, k)
    end do
    a = -7
    b = -7
    call mpi_gather(s, n, t, a, n, t, root, comm, ierr)
    call ref_gather(0, s, n, t, b, n, t, root, comm, ierr)
    if (r == root) call same(a, b, tot * e, 'gather')
    call mpi_gatherv(s, rc(r + 1), t, a, rc, rd, t, root, comm, ierr)
    call ref_gatherv(0, s, rc(r + 1), t, b, rc, rd, t, root, comm, ierr)
    if (r == root) call same(a, b, tot * e, 'gatherv')
    ! In place: the root's own part is in its buffer already.
    if (r == root) then
      do k = 1, n * e
        a(root * n * e + k) = s(k)
        b(root * n * e + k) = s(k)
      end do
      call mpi_gather(MPI_IN_PLACE, n, t, a, n, t, root, comm, ierr)
    else
      call mpi_gather(s, n, t, a, n, t, root, comm, ierr)
    end if
    call ref_gather(0, s, n, t, b, n, t, root, comm, ierr)
    if (r == root) call same(a, b, tot * e, 'gather in place')
    a = -7
    b = -7
    call mpi_scatter(s, n, t, a, n, t, root, comm, ierr)
    call ref_scatter(0, s, n, t, b, n, t, root, comm, ierr)
    call same(a, b, tot * e, 'scatter')
    call mpi_scatterv(s, rc, rd, t, a, rc(r + 1), t, root, comm, ierr)
    call ref_scatterv(0, s, rc, rd, t, b, rc(r + 1), t, root, comm, ierr)
    call same(a, b, tot * e, 'scatterv')
    a = -7
    b = -7
    if (r == root) then
      call mpi_scatter(s, n, t, MPI_IN_PLACE, n, t, root, comm, ierr)
    else
      call mpi_scatter(s, n, t, a, n, t, root, comm, ierr)
    end if
    call ref_scatter(0, s, n, t, b, n, t, root, comm, ierr)
    if (r /= root) call same(a, b, tot * e, 'scatter in place')
    checks = checks + 1
    if (r == root .and. any(a /= -7)) call fail('scatter in place root')
  end subroutine rooted

  ! A reduction type i and op o MPI defines together (user ops: theirs).
  logical function defined(o, i)
    integer, intent(in) :: o, i
    select case (o)
    case (1, 2)
      defined = i <= 6
    case (3, 4)
      defined = i <= 4
    case (5, 6, 7)
      defined = i <= 2
    case (8, 9, 10)
      defined = i == 7
    case (11, 12)
      defined = i >= 8
    case (13)
      defined = i == 1
    case default
      defined = i == 8
    end select
  end function defined

  ! n elements of reduction type ti of rank r at raw.
  subroutine rfill(raw, n, ti, r, sd)
    integer(8), target, intent(inout) :: raw(:)
    integer, intent(in) :: n, ti, r, sd
    integer(4), pointer :: i4(:)
    integer(8), pointer :: i8(:)
    real(4), pointer :: r4(:)
    real(8), pointer :: r8(:)
    complex(4), pointer :: c4(:)
    complex(8), pointer :: c8(:)
    logical, pointer :: l4(:)
    integer :: k
    raw = 0
    select case (ti)
    case (1)
      call c_f_pointer(c_loc(raw), i4, (/ n /))
      do k = 1, n
        i4(k) = small(r, k, sd)
      end do
    case (2)
      call c_f_pointer(c_loc(raw), i8, (/ n /))
      do k = 1, n
        i8(k) = small(r, k, sd)
      end do
    case (3)
      call c_f_pointer(c_loc(raw), r4, (/ n /))
      do k = 1, n
        r4(k) = real(small(r, k, sd), 4)
      end do
    case (4)
      call c_f_pointer(c_loc(raw), r8, (/ n /))
      do k = 1, n
        r8(k) = real(small(r, k, sd), 8)
      end do
    case (5)
      call c_f_pointer(c_loc(raw), c4, (/ n /))
      do k = 1, n
        c4(k) = cmplx(small(r, k, sd), small(r, k + 7, sd), 4)
      end do
    case (6)
      call c_f_pointer(c_loc(raw), c8, (/ n /))
      do k = 1, n
        c8(k) = cmplx(small(r, k, sd), small(r, k + 7, sd), 8)
      end do
    case (7)
      call c_f_pointer(c_loc(raw), l4, (/ n /))
      do k = 1, n
        l4(k) = small(r, k, sd) > 0
      end do
    case (8)
      call c_f_pointer(c_loc(raw), i4, (/ 2 * n /))
      do k = 1, n
        i4(2 * k - 1) = small(r, k, sd) + 3
        i4(2 * k) = r + k
      end do
    case (9)
      call c_f_pointer(c_loc(raw), r4, (/ 2 * n /))
      do k = 1, n
        r4(2 * k - 1) = real(small(r, k, sd), 4)
        r4(2 * k) = real(r, 4)
      end do
    case default
      call c_f_pointer(c_loc(raw), r8, (/ 2 * n /))
      do k = 1, n
        r8(2 * k - 1) = real(small(r, k, sd), 8)
        r8(2 * k) = real(r, 8)
      end do
    end select
  end subroutine rfill

  ! The first n elements of reduction type ti at a and b agree: floating
  ! values by value (a complex product's zero takes its sign from the
  ! order of the operations), the rest bit for bit.
  subroutine ragree(a, b, n, ti, what)
    integer(8), target, intent(inout) :: a(:), b(:)
    integer, intent(in) :: n, ti
    character(len=*), intent(in) :: what
    integer(4), pointer :: ia(:), ib(:)
    real(4), pointer :: ra(:), rb(:)
    real(8), pointer :: da(:), db(:)
    integer :: w
    logical :: ok
    checks = checks + 1
    select case (ti)
    case (3, 5, 9)
      w = n
      if (ti /= 3) w = 2 * n
      call c_f_pointer(c_loc(a), ra, (/ w /))
      call c_f_pointer(c_loc(b), rb, (/ w /))
      ok = all(ra(1:w) == rb(1:w))
    case (4, 6, 10)
      w = n
      if (ti /= 4) w = 2 * n
      call c_f_pointer(c_loc(a), da, (/ w /))
      call c_f_pointer(c_loc(b), db, (/ w /))
      ok = all(da(1:w) == db(1:w))
    case default
      w = n
      if (ti == 2 .or. ti == 8) w = 2 * n
      call c_f_pointer(c_loc(a), ia, (/ w /))
      call c_f_pointer(c_loc(b), ib, (/ w /))
      ok = all(ia(1:w) == ib(1:w))
    end select
    if (.not. ok) call fail(what)
  end subroutine ragree

  ! One random operation and a type MPI defines it on, n elements: every
  ! reduction against the MPI's, and in place against that.
  subroutine reductions(comm, n)
    integer, intent(in) :: comm, n
    integer :: r, p, o, ti, i, root, tot, blk, sd, t, op
    integer, allocatable :: rc(:)
    integer(8), allocatable, target :: s(:), a(:), b(:)
    character(len=48) :: what
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    o = 1 + rnd(14)
    ti = 1 + rnd(10)
    do while (.not. defined(o, ti))
      ti = 1 + rnd(10)
    end do
    root = rnd(p)
#ifdef ZC_MPICH
    ! MPICH 4.0.2's own in-place MPI_Reduce to a root other than 0
    ! crashes (the run without the layer is the reference).
    root = 0
#endif
    sd = rnd(1000)
    t = rtys(ti)
    op = ops(o)
    write (what, '(a,i0,a,i0,a,i0)') 'op ', o, ' type ', ti, ' n ', n
    allocate (rc(p))
    tot = 0
    do i = 1, p
      rc(i) = vcount(i - 1, sd, n / p)
      tot = tot + rc(i)
    end do
    tot = max(tot, n, 1)
    ! Room for tot elements of 16 bytes at most.
    allocate (s(2 * tot + 2), a(2 * tot + 2), b(2 * tot + 2))
    call rfill(s, tot, ti, r, sd)
    do i = 1, 3
      call vector(i, comm, r, s, a, b, n, ti, op, what)
    end do
    a = 0
    b = 0
    call mpi_reduce(s, a, n, t, op, root, comm, ierr)
    call ref_reduce(s, b, n, t, op, root, comm, ierr)
    if (r == root) call ragree(a, b, n, ti, 'reduce ' // what)
    a = s
    if (r == root) then
      call mpi_reduce(MPI_IN_PLACE, a, n, t, op, root, comm, ierr)
      call ragree(a, b, n, ti, 'reduce in place ' // what)
    else
      call mpi_reduce(s, a, n, t, op, root, comm, ierr)
    end if
    blk = n / p
    a = 0
    b = 0
    call mpi_reduce_scatter_block(s, a, blk, t, op, comm, ierr)
    call ref_reduce_scatter_block(s, b, blk, t, op, comm, ierr)
    call ragree(a, b, blk, ti, 'reduce_scatter_block ' // what)
    call mpi_reduce_scatter(s, a, rc, t, op, comm, ierr)
    call ref_reduce_scatter(s, b, rc, t, op, comm, ierr)
    call ragree(a, b, rc(r + 1), ti, 'reduce_scatter ' // what)
    a = s
    call mpi_reduce_scatter(MPI_IN_PLACE, a, rc, t, op, comm, ierr)
    call ragree(a, b, rc(r + 1), ti, 'reduce_scatter in place ' // what)
  end subroutine reductions

  ! Allreduce (k 1), Scan (2) or Exscan (3) of n elements of reduction
  ! type ti at s on rank r, and in place, against the MPI's (Exscan's
  ! result at rank 0 is undefined: not compared).
  subroutine vector(k, comm, r, s, a, b, n, ti, op, what)
    integer, intent(in) :: k, comm, r, n, ti, op
    integer(8), intent(in) :: s(:)
    integer(8), intent(inout) :: a(:), b(:)
    character(len=*), intent(in) :: what
    character(len=10), parameter :: names(3) = &
        (/ 'allreduce ', 'scan      ', 'exscan    ' /)
    integer :: t, pass
    t = rtys(ti)
    a = 0
    b = 0
    do pass = 1, 2
      select case (k * 10 + pass)
      case (11)
        call mpi_allreduce(s, a, n, t, op, comm, ierr)
        call ref_allreduce(s, b, n, t, op, comm, ierr)
      case (12)
        call mpi_allreduce(MPI_IN_PLACE, a, n, t, op, comm, ierr)
      case (21)
        call mpi_scan(s, a, n, t, op, comm, ierr)
        call ref_scan(s, b, n, t, op, comm, ierr)
      case (22)
        call mpi_scan(MPI_IN_PLACE, a, n, t, op, comm, ierr)
      case (31)
        call mpi_exscan(s, a, n, t, op, comm, ierr)
        call ref_exscan(s, b, n, t, op, comm, ierr)
      case default
        call mpi_exscan(MPI_IN_PLACE, a, n, t, op, comm, ierr)
      end select
      if (k /= 3 .or. r /= 0) then
        if (pass == 1) call ragree(a, b, n, ti, trim(names(k)) // ' ' // what)
        if (pass == 2) call ragree(a, b, n, ti, trim(names(k)) // &
                                   ' in place ' // what)
      end if
      a = s
    end do
  end subroutine vector

  ! The nonblocking four, each against the MPI's blocking result, two in
  ! flight at once, completed by the completion calls in turn.
  subroutine nonblocking(comm, n, ti)
    integer, intent(in) :: comm, n, ti
    integer :: r, p, k, m, t, root, req(2), o, rt
    integer, allocatable :: s(:), a(:), b(:), c(:), d(:)
    integer(8), allocatable, target :: x(:), y(:), z(:)
    call mpi_comm_rank(comm, r, ierr)
    call mpi_comm_size(comm, p, ierr)
    t = dtys(ti)
    m = n * ipe(ti)
    root = rnd(p)
    allocate (s(max(1, p * m)), a(max(1, p * m)), b(max(1, p * m)))
    allocate (c(max(1, p * m)), d(max(1, p * m)))
    do k = 1, p * m
      s(k) = val(r, 11, k)
    end do
    a = -7
    b = -7
    c = -7
    d = -7
    call mpi_ialltoall(s, n, t, a, n, t, comm, req(1), ierr)
    call mpi_iallgather(s, n, t, c, n, t, comm, req(2), ierr)
    call complete(req(2), rnd(5))
    call complete(req(1), rnd(5))
    call ref_alltoall(0, s, n, t, b, n, t, comm, ierr)
    call same(a, b, p * m, 'ialltoall')
    call ref_allgather(0, s, n, t, d, n, t, comm, ierr)
    call same(c, d, p * m, 'iallgather')
    a = s
    b = s
    call mpi_ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm, &
                       req(1), ierr)
    call complete(req(1), rnd(5))
    call ref_alltoall(1, s, 0, MPI_DATATYPE_NULL, b, n, t, comm, ierr)
    call same(a, b, p * m, 'ialltoall in place')
    do k = 1, p * m
      a(k) = val(r, 12, k)
    end do
    b = a
    call mpi_iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm, &
                        req(1), ierr)
    call complete(req(1), rnd(5))
    call ref_allgather(1, s, 0, MPI_DATATYPE_NULL, b, n, t, comm, ierr)
    call same(a, b, p * m, 'iallgather in place')
    do k = 1, m
      if (r == root) then
        a(k) = val(root, 13, k)
      else
        a(k) = -7
      end if
    end do
    b = a
    call mpi_ibcast(a, n, t, root, comm, req(1), ierr)
    call complete(req(1), rnd(5))
    call ref_bcast(b, n, t, root, comm, ierr)
    call same(a, b, m, 'ibcast')
    ! Iallreduce: a commutative operation, a type it is defined on.
    o = 1 + rnd(13)
    rt = 1 + rnd(10)
    do while (.not. defined(o, rt))
      rt = 1 + rnd(10)
    end do
    allocate (x(2 * n + 2), y(2 * n + 2), z(2 * n + 2))
    call rfill(x, n, rt, r, o)
    y = 0
    z = 0
    call mpi_iallreduce(x, y, n, rtys(rt), ops(o), comm, req(1), ierr)
    call complete(req(1), rnd(5))
    call ref_allreduce(x, z, n, rtys(rt), ops(o), comm, ierr)
    call ragree(y, z, n, rt, 'iallreduce')
    y = x
    call mpi_iallreduce(MPI_IN_PLACE, y, n, rtys(rt), ops(o), comm, &
                        req(1), ierr)
    call complete(req(1), rnd(5))
    call ragree(y, z, n, rt, 'iallreduce in place')
  end subroutine nonblocking

  ! Barriers: rank 0 comes 0.2 s late; no rank may leave before it came
  ! (ref_clock: the host's monotonic clock, one for all ranks; MPI_Wtime
  ! of Open MPI counts from each process's MPI_Init).
  subroutine barriers(comm)
    integer, intent(in) :: comm
    integer :: r, req, k
    double precision :: t0, t1, came
    call mpi_comm_rank(comm, r, ierr)
    do k = 0, 1
      call ref_barrier(comm, ierr)
      if (r == 0) then
        call ref_clock(t0)
        t1 = t0
        do while (t1 - t0 < 0.2d0)
          call ref_clock(t1)
        end do
        came = t1
      end if
      if (k == 0) then
        call mpi_barrier(comm, ierr)
      else
        call mpi_ibarrier(comm, req, ierr)
        call complete(req, r)
      end if
      call ref_clock(t0)
      call ref_bcast(came, 1, MPI_DOUBLE_PRECISION, 0, comm, ierr)
      checks = checks + 1
      if (t0 < came) call fail('barrier left early')
    end do
  end subroutine barriers
end program fcoll

! (1 + x)(1 + y) - 1 on INTEGERs: commutative, associative.
subroutine ucomm(invec, inoutvec, len, dtype)
  implicit none
  integer :: len, dtype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = invec(i) * inoutvec(i) + invec(i) + inoutvec(i)
  end do
  if (dtype == -12345) print *, 'never'
end subroutine ucomm

! x -> a x + b maps on 2INTEGER pairs (a, b), composed mod 9973:
! inout = in o inout; associative, not commutative.
subroutine unc(invec, inoutvec, len, dtype)
  implicit none
  integer :: len, dtype, i, a, b, c, d
  integer :: invec(2, len), inoutvec(2, len)
  do i = 1, len
    a = invec(1, i)
    b = invec(2, i)
    c = inoutvec(1, i)
    d = inoutvec(2, i)
    inoutvec(1, i) = mod(a * c, 9973)
    inoutvec(2, i) = mod(a * d + b, 9973)
  end do
  if (dtype == -12345) print *, 'never'
end subroutine unc
