! SPDX-License-Identifier: LGPL-2.1-or-later
! persist.f90 - persistent requests from Fortran, against MPI's rules,
! on pairs of ranks (0 and 1, 2 and 3, ...): the even rank sends, the odd
! one receives.
!   1. a small and a large receive (mpi_recv_init) and their sends
!      (mpi_send_init, mpi_ssend_init) restarted 200 times together with
!      mpi_startall, every element checked every round;
!   2. a receive of any source and any tag restarted 30 times: its status
!      names the sender and the round's tag;
!   3. a started receive cancelled (nobody sends its tag): mpi_wait ends
!      it, mpi_test_cancelled says so, and restarted it takes the message
!      sent afterwards;
!   4. a started receive freed (mpi_request_free): the first message of
!      its tag still lands in its buffer, the next one in the mpi_recv
!      posted after it.
! Each step stops the job with a message on the first wrong value; rank 0
! prints what passed, the same with and without libzcrecv-mpi.
program persist
  implicit none
  include 'mpif.h'
  integer, parameter :: nsmall = 8, nbig = 65536, rounds = 200
  integer :: rank, nproc, peer, ierr, r, i, tag, n
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2), reqs(2)
  integer :: req, go(1)
  ! Written by the MPI behind the compiler's back (a started request's
  ! buffer): volatile, or an optimiser keeps the value stored before.
  integer, volatile :: small(nsmall), big(nbig), word(1), wa(1), wb(1)
  logical :: even, flag

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nproc, ierr)
  if (mod(nproc, 2) /= 0) call fail('an even number of ranks', nproc)
  even = mod(rank, 2) == 0
  if (even) then
    peer = rank + 1
  else
    peer = rank - 1
  end if

  ! 1. restarted many times, two at once
  if (even) then
    call mpi_send_init(small, nsmall, MPI_INTEGER, peer, 1, &
                       MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_ssend_init(big, nbig, MPI_INTEGER, peer, 2, &
                        MPI_COMM_WORLD, reqs(2), ierr)
  else
    call mpi_recv_init(small, nsmall, MPI_INTEGER, peer, 1, &
                       MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_recv_init(big, nbig, MPI_INTEGER, peer, 2, &
                       MPI_COMM_WORLD, reqs(2), ierr)
  end if
  do r = 1, rounds
    if (even) then
      do i = 1, nsmall
        small(i) = r * 100 + i
      end do
      do i = 1, nbig
        big(i) = r * 7 + i
      end do
    else
      small = -1
      big = -1
    end if
    call mpi_startall(2, reqs, ierr)
    call mpi_waitall(2, reqs, sts, ierr)
    if (.not. even) then
      do i = 1, nsmall
        if (small(i) /= r * 100 + i) call fail('restart: small', r)
      end do
      do i = 1, nbig
        if (big(i) /= r * 7 + i) call fail('restart: large', r)
      end do
      call mpi_get_count(sts(:, 2), MPI_INTEGER, n, ierr)
      if (n /= nbig .or. sts(MPI_TAG, 2) /= 2) &
        call fail('restart: status of the large one', r)
    end if
  end do
  call mpi_request_free(reqs(1), ierr)
  call mpi_request_free(reqs(2), ierr)
  if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) &
    call fail('restart: freed requests not null', 0)
  call report('restarted 200 times (small and large, startall)')

  ! 2. wildcards
  if (even) then
    do r = 1, 30
      word(1) = r
      tag = 10 + mod(r, 3)
      call mpi_send(word, 1, MPI_INTEGER, peer, tag, MPI_COMM_WORLD, ierr)
    end do
  else
    call mpi_recv_init(word, 1, MPI_INTEGER, MPI_ANY_SOURCE, &
                       MPI_ANY_TAG, MPI_COMM_WORLD, req, ierr)
    do r = 1, 30
      word(1) = -1
      call mpi_start(req, ierr)
      call mpi_wait(req, st, ierr)
      if (word(1) /= r .or. st(MPI_SOURCE) /= peer .or. &
          st(MPI_TAG) /= 10 + mod(r, 3)) call fail('wildcards', r)
    end do
    call mpi_request_free(req, ierr)
  end if
  call report('wildcard source and tag, 30 restarts')

  ! 3. cancelled, then restarted
  if (even) then
    call mpi_recv(go, 1, MPI_INTEGER, peer, 98, MPI_COMM_WORLD, st, ierr)
    word(1) = 4242
    call mpi_send(word, 1, MPI_INTEGER, peer, 99, MPI_COMM_WORLD, ierr)
  else
    call mpi_recv_init(word, 1, MPI_INTEGER, peer, 99, MPI_COMM_WORLD, &
                       req, ierr)
    word(1) = -1
    call mpi_start(req, ierr)
    call mpi_cancel(req, ierr)
    call mpi_wait(req, st, ierr)
    call mpi_test_cancelled(st, flag, ierr)
    if (.not. flag .or. word(1) /= -1) call fail('cancel', word(1))
    call mpi_start(req, ierr)
    go(1) = 1
    call mpi_send(go, 1, MPI_INTEGER, peer, 98, MPI_COMM_WORLD, ierr)
    call mpi_wait(req, st, ierr)
    call mpi_test_cancelled(st, flag, ierr)
    if (flag .or. word(1) /= 4242) call fail('restart after cancel', word(1))
    call mpi_request_free(req, ierr)
  end if
  call report('cancelled, then restarted')

  ! 4. freed while active
  if (even) then
    call mpi_recv(go, 1, MPI_INTEGER, peer, 97, MPI_COMM_WORLD, st, ierr)
    wa(1) = 111
    wb(1) = 222
    call mpi_send(wa, 1, MPI_INTEGER, peer, 50, MPI_COMM_WORLD, ierr)
    call mpi_send(wb, 1, MPI_INTEGER, peer, 50, MPI_COMM_WORLD, ierr)
  else
    wa(1) = -1
    wb(1) = -1
    call mpi_recv_init(wa, 1, MPI_INTEGER, peer, 50, &
                       MPI_COMM_WORLD, req, ierr)
    call mpi_start(req, ierr)
    call mpi_request_free(req, ierr)
    if (req /= MPI_REQUEST_NULL) call fail('freed while active: handle', 0)
    go(1) = 1
    call mpi_send(go, 1, MPI_INTEGER, peer, 97, MPI_COMM_WORLD, ierr)
    call mpi_recv(wb, 1, MPI_INTEGER, peer, 50, MPI_COMM_WORLD, st, &
                  ierr)
    if (wb(1) /= 222) call fail('freed while active: next', wb(1))
    if (wa(1) /= 111) call fail('freed while active: its own', wa(1))
  end if
  call report('freed while active')

  call mpi_finalize(ierr)

contains

  subroutine fail(what, v)
    character(len=*), intent(in) :: what
    integer, intent(in) :: v
    integer :: e
    print *, 'persist: rank', rank, 'wrong: ', what, v
    call mpi_abort(MPI_COMM_WORLD, 3, e)
  end subroutine fail

  subroutine report(what)
    character(len=*), intent(in) :: what
    integer :: e
    call mpi_barrier(MPI_COMM_WORLD, e)
    if (rank == 0) print '(a, a)', 'persist: ok: ', what
  end subroutine report

end program persist
