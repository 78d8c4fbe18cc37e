// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";

/// @title CreditFacilityV2
/// @notice The ledger of record of the receivable-backed credit service. A lender's session wallet pays a supplier only
/// under a lease authorization the service signed (EIP-712), which fixes the advance's terms; from then on the
/// contract knows what is owed on each advance and routes every repayment, settlement and recovery by one rule:
/// the lender's part first, then the insurance reserve's share. Every escrowed and collateral token of a final job
/// ends with a lender, the reserve, the job's client (a failed or reclaimed job's escrow) or its borrower (the rest),
/// held here for that party while its token refuses the transfer (heldFor).
/// Keys are opaque here. The service's rules: jobKey = keccak256(abi.encodePacked(chainid, address(this), utf8(jobId)))
/// (one network's key says nothing of another's; jobs funded before 2026-11-28 used keccak256(utf8(jobId)));
/// offerKey (the advance's key) = keccak256(keySalt ++ utf8(offerId)).
/// Payments go out pull-over-push where it matters: a transfer the token refuses (a blacklisted recipient, a paused
/// token) never reverts the call that makes it; the amount is held for its recipient (PaymentHeld), who, or anyone on
/// its behalf, claims it later (claimHeld) once the token accepts it. One refused recipient blocks nobody else's money.
contract CreditFacilityV2 is EIP712, ReentrancyGuard {
    using SafeERC20 for IERC20;

    enum JobStatus {
        None,
        Open,
        Settled,
        Failed,
        Closed,
        /// Its client or borrower ended it (reclaimJob): escrow to the client, collateral to the borrower; no advance of the
        /// job owed anything and nobody ended it in time.
        Reclaimed
    }

    struct Job {
        address client;
        address borrower;
        address asset;
        uint256 escrow;
        uint256 collateral;
        /// Advances of this job with anything still owed (settleJob must name exactly these).
        uint256 outstanding;
        /// Advances neither fully repaid nor liquidated: while any is left, a failed job keeps its collateral.
        uint256 unresolved;
        JobStatus status;
        /// block.timestamp of fundJob: the client or the borrower may reclaim from fundedAt + reclaimDelay on.
        uint256 fundedAt;
        /// Set by the job's first paySupplier and never cleared (information: reclaimJob asks `outstanding`, not this).
        bool advanced;
    }

    struct Advance {
        bytes32 jobKey;
        /// The paying session wallet: repayments recycle the lender's capital into the wallet that lends.
        address lender;
        address asset;
        uint256 dueAt;
        uint256 lenderOwed;
        uint256 reserveOwed;
        bool liquidated;
        bool exists;
    }

    /// The terms of one lease, signed by the service's lease signer. jobKey is 0 for an advance on a backing source.
    struct LeaseAuthorization {
        bytes32 offerKey;
        bytes32 jobKey;
        address payer;
        address supplier;
        address asset;
        uint256 amount;
        uint256 fee;
        uint256 reserveShare;
        uint256 deadline;
        uint256 dueAt;
    }

    bytes32 public constant LEASE_AUTHORIZATION_TYPEHASH = keccak256(
        "LeaseAuthorization(bytes32 offerKey,bytes32 jobKey,address payer,address supplier,address asset,"
        "uint256 amount,uint256 fee,uint256 reserveShare,uint256 deadline,uint256 dueAt)"
    );

    /// Which rule this deployment's reclaimJob has: true, the job's client or its borrower may call it (outsider29). A
    /// deployment from before has no such getter (a call to it reverts without data) and takes a reclaim from the client
    /// only; the service takes both (its start-up probe asks advancesPerJobMax()), so this is how a party tells them apart.
    bool public constant BORROWER_MAY_RECLAIM = true;

    address public immutable operator;
    address public immutable leaseSigner;
    /// Seconds after fundJob from which the client or the borrower may reclaim a job none of whose advances owes anything
    /// (reclaimJob).
    uint256 public immutable reclaimDelay;
    /// The most advances of one job that owe anything at once (its `outstanding`): settleJob names them all in one
    /// transaction, so a job must never hold more than one settlement can pay (the service's advancesPerJobMax).
    uint256 public immutable advancesPerJobMax;

    mapping(bytes32 jobKey => Job) private _jobs;
    mapping(bytes32 offerKey => Advance) private _advances;
    mapping(address asset => uint256 amount) public reserveOf;
    /// Payments the token refused to deliver, by asset and recipient: the recipient's, to claim (claimHeld).
    mapping(address asset => mapping(address account => uint256 amount)) public heldFor;
    /// heldFor summed over every recipient, per asset: the contract's balance is its jobs' escrow and collateral, the
    /// reserve and this.
    mapping(address asset => uint256 amount) public heldOf;

    event JobFunded(bytes32 indexed jobKey, address indexed client, address indexed borrower, address asset, uint256 amount);
    event CollateralPosted(bytes32 indexed jobKey, address indexed borrower, address asset, uint256 amount);
    event SupplierPaid(
        bytes32 indexed offerKey,
        address indexed payer,
        address indexed supplier,
        bytes32 jobKey,
        address asset,
        uint256 amount,
        uint256 fee,
        uint256 reserveShare,
        uint256 dueAt
    );
    /// lenderOwed and reserveOwed: what is still owed after this repayment.
    event Repaid(
        bytes32 indexed offerKey,
        address indexed payer,
        address indexed lender,
        uint256 toLender,
        uint256 toReserve,
        uint256 lenderOwed,
        uint256 reserveOwed
    );
    event AdvanceSettled(bytes32 indexed offerKey, bytes32 indexed jobKey, address indexed lender, uint256 toLender, uint256 toReserve);
    event JobSettled(bytes32 indexed jobKey, address indexed borrower, uint256 toLenders, uint256 toReserve, uint256 toBorrower);
    event JobFailed(bytes32 indexed jobKey, address indexed client, uint256 escrowRefunded);
    event JobClosed(bytes32 indexed jobKey, address indexed borrower, uint256 collateralReleased);
    event JobReclaimed(bytes32 indexed jobKey, address indexed client, uint256 escrowRefunded, uint256 collateralReleased);
    /// The token refused `amount` to `to` (a blacklisted address): the contract holds it for `to` (heldFor).
    event PaymentHeld(address indexed asset, address indexed to, uint256 amount);
    /// A held payment went out to its recipient; `caller` paid the gas.
    event HeldPaymentClaimed(address indexed asset, address indexed to, address caller, uint256 amount);
    event Liquidated(
        bytes32 indexed offerKey,
        bytes32 indexed jobKey,
        address indexed lender,
        uint256 fromCollateral,
        uint256 fromBacking,
        uint256 fromReserve,
        uint256 shortfall
    );

    error ZeroAmount();
    error ZeroAddress();
    error ZeroKey();
    error RolesNotSeparate(address account);
    error NotOperator(address caller);
    error NotBorrower(address caller);
    error NotPayer(address caller, address payer);
    error UnknownJob(bytes32 jobKey);
    error JobAlreadyFunded(bytes32 jobKey);
    error JobNotOpen(bytes32 jobKey, JobStatus status);
    error AssetMismatch(address expected, address given);
    error DeadlinePassed(uint256 deadline, uint256 nowSeconds);
    error OfferAlreadyPaid(bytes32 offerKey);
    error MalformedLeaseSignature();
    error WrongLeaseSigner(address recovered);
    error ReserveOverFee(uint256 reserveShare, uint256 fee);
    error InvalidSupplier(address supplier);
    error UnknownAdvance(bytes32 offerKey);
    error NothingOwed(bytes32 offerKey);
    error AdvanceCountMismatch(uint256 given, uint256 outstanding);
    error AdvanceOfOtherJob(bytes32 offerKey, bytes32 jobKey);
    error DuplicateAdvance(bytes32 offerKey);
    error AdvancesNotAscending(bytes32 offerKey);
    error Underfunded(uint256 owed, uint256 held);
    error AlreadyLiquidated(bytes32 offerKey);
    error NotDefaulted(bytes32 offerKey, uint256 dueAt, uint256 nowSeconds);
    error ZeroDelay();
    error NotClient(address caller);
    error AdvancesOwed(bytes32 jobKey, uint256 outstanding);
    error ReclaimTooEarly(uint256 reclaimableAt, uint256 nowSeconds);
    error TooManyAdvances(bytes32 jobKey, uint256 advancesPerJobMax);
    error NothingHeld(address asset, address account);

    modifier onlyOperator() {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _;
    }

    constructor(address operator_, address leaseSigner_, uint256 reclaimDelay_, uint256 advancesPerJobMax_)
        EIP712("CreditFacility", "2")
    {
        if (operator_ == address(0) || leaseSigner_ == address(0)) revert ZeroAddress();
        // A client able to reclaim at once could pull the escrow from under any job the service registers.
        if (reclaimDelay_ == 0) revert ZeroDelay();
        if (advancesPerJobMax_ == 0) revert ZeroAmount();
        // The signer's key signs on the request path and holds no gas; the operator moves money. One key must not do both.
        if (operator_ == leaseSigner_) revert RolesNotSeparate(operator_);
        operator = operator_;
        leaseSigner = leaseSigner_;
        reclaimDelay = reclaimDelay_;
        advancesPerJobMax = advancesPerJobMax_;
    }

    // ------------------------------------------------------------------------------------------ jobs

    /// @notice The job's client escrows the receivable for `borrower`.
    function fundJob(bytes32 jobKey, address asset, uint256 amount, address borrower) external nonReentrant {
        if (jobKey == bytes32(0)) revert ZeroKey();
        if (asset == address(0) || borrower == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        Job storage job = _jobs[jobKey];
        if (job.status != JobStatus.None) revert JobAlreadyFunded(jobKey);
        job.client = msg.sender;
        job.borrower = borrower;
        job.asset = asset;
        job.escrow = amount;
        job.status = JobStatus.Open;
        job.fundedAt = block.timestamp;
        IERC20(asset).safeTransferFrom(msg.sender, address(this), amount);
        emit JobFunded(jobKey, msg.sender, borrower, asset, amount);
    }

    /// @notice The job's borrower locks collateral in the job's asset while the job is open.
    function postCollateral(bytes32 jobKey, address asset, uint256 amount) external nonReentrant {
        Job storage job = _openJob(jobKey);
        if (msg.sender != job.borrower) revert NotBorrower(msg.sender);
        if (asset != job.asset) revert AssetMismatch(job.asset, asset);
        if (amount == 0) revert ZeroAmount();
        job.collateral += amount;
        IERC20(asset).safeTransferFrom(msg.sender, address(this), amount);
        emit CollateralPosted(jobKey, msg.sender, asset, amount);
    }

    // ------------------------------------------------------------------------------------------ advances

    /// @notice The leased lender's session wallet pays the supplier under the service's lease authorization, which
    /// records the advance with its terms. Only `a.payer` may use it, only until `a.deadline` (inclusive), once per offer.
    /// A supplier the token refuses (its blacklist) does not stop it: the principal is held for the supplier
    /// (PaymentHeld; claimHeld pays it once the token takes it), so the lender is not taken for one that would not pay.
    function paySupplier(LeaseAuthorization calldata a, bytes calldata signature) external nonReentrant {
        if (msg.sender != a.payer) revert NotPayer(msg.sender, a.payer);
        if (block.timestamp > a.deadline) revert DeadlinePassed(a.deadline, block.timestamp);
        if (a.offerKey == bytes32(0)) revert ZeroKey();
        if (_advances[a.offerKey].exists) revert OfferAlreadyPaid(a.offerKey);
        _checkLeaseSignature(a, signature);
        if (a.amount == 0) revert ZeroAmount();
        if (a.asset == address(0)) revert ZeroAddress();
        if (a.reserveShare > a.fee) revert ReserveOverFee(a.reserveShare, a.fee);
        // Principal that lands in this contract or back with the payer would be no advance at all.
        if (a.supplier == address(0) || a.supplier == address(this) || a.supplier == a.payer) revert InvalidSupplier(a.supplier);
        if (a.jobKey != bytes32(0)) {
            Job storage job = _openJob(a.jobKey);
            if (a.asset != job.asset) revert AssetMismatch(job.asset, a.asset);
            if (a.supplier == job.borrower) revert InvalidSupplier(a.supplier);
            if (job.outstanding >= advancesPerJobMax) revert TooManyAdvances(a.jobKey, advancesPerJobMax);
            job.outstanding += 1;
            job.unresolved += 1;
            job.advanced = true;
        }
        _advances[a.offerKey] = Advance({
            jobKey: a.jobKey,
            lender: a.payer,
            asset: a.asset,
            dueAt: a.dueAt,
            lenderOwed: a.amount + a.fee - a.reserveShare,
            reserveOwed: a.reserveShare,
            liquidated: false,
            exists: true
        });
        if (!IERC20(a.asset).trySafeTransferFrom(a.payer, a.supplier, a.amount)) {
            // Refused: the payer's own balance or allowance reverts here with the token's error, as before. A supplier
            // the token refuses (a blacklist) is the borrower's choice, not the lender's fault: the principal is taken
            // from the payer and held for the supplier (claimHeld), and the advance is born as if it had landed.
            IERC20(a.asset).safeTransferFrom(a.payer, address(this), a.amount);
            _hold(a.asset, a.supplier, a.amount);
        }
        emit SupplierPaid(a.offerKey, a.payer, a.supplier, a.jobKey, a.asset, a.amount, a.fee, a.reserveShare, a.dueAt);
    }

    /// @notice Anyone repays an advance, of any amount: the lender's part first, then the reserve's share. At most what
    /// is owed is pulled, so an overpayment never leaves the payer's wallet. Works on a liquidated advance too. When the
    /// token refuses the lender's part to the lender, the contract takes it from the payer and holds it for the lender.
    function repay(bytes32 offerKey, uint256 amount) external nonReentrant {
        if (amount == 0) revert ZeroAmount();
        Advance storage adv = _owingAdvance(offerKey);
        uint256 toLender = _min(amount, adv.lenderOwed);
        uint256 toReserve = _min(amount - toLender, adv.reserveOwed);
        adv.lenderOwed -= toLender;
        adv.reserveOwed -= toReserve;
        reserveOf[adv.asset] += toReserve;
        address lender = adv.lender;
        address asset = adv.asset;
        if (toLender > 0 && !IERC20(asset).trySafeTransferFrom(msg.sender, lender, toLender)) {
            // Refused: the payer's own balance or allowance reverts here with the token's error, as before.
            IERC20(asset).safeTransferFrom(msg.sender, address(this), toLender);
            _hold(asset, lender, toLender);
        }
        if (toReserve > 0) IERC20(asset).safeTransferFrom(msg.sender, address(this), toReserve);
        emit Repaid(offerKey, msg.sender, lender, toLender, toReserve, adv.lenderOwed, adv.reserveOwed);
        if (adv.lenderOwed == 0 && adv.reserveOwed == 0) _resolveRepaid(adv);
    }

    /// @notice The operator settles a completed job. `offerKeys` are exactly the job's advances with anything owed, in
    /// ascending order (so that a duplicate is refused by comparing each key with the one before it: a pairwise check
    /// cost about 240 gas per pair, 10.8M of the 17.2M gas of a job of 300 advances); each is paid in full from escrow,
    /// then collateral (lender's part, then the reserve's share), and whatever remains of escrow and collateral goes
    /// to the borrower.
    function settleJob(bytes32 jobKey, bytes32[] calldata offerKeys) external nonReentrant onlyOperator {
        Job storage job = _openJob(jobKey);
        if (offerKeys.length != job.outstanding) revert AdvanceCountMismatch(offerKeys.length, job.outstanding);
        uint256 owed;
        for (uint256 i; i < offerKeys.length; i++) {
            Advance storage adv = _owingAdvance(offerKeys[i]);
            if (adv.jobKey != jobKey) revert AdvanceOfOtherJob(offerKeys[i], adv.jobKey);
            if (i > 0 && offerKeys[i] <= offerKeys[i - 1]) {
                if (offerKeys[i] == offerKeys[i - 1]) revert DuplicateAdvance(offerKeys[i]);
                revert AdvancesNotAscending(offerKeys[i]);
            }
            owed += adv.lenderOwed + adv.reserveOwed;
        }
        uint256 held = job.escrow + job.collateral;
        if (owed > held) revert Underfunded(owed, held);

        address asset = job.asset;
        uint256 toLenders;
        uint256 toReserve;
        for (uint256 i; i < offerKeys.length; i++) {
            Advance storage adv = _advances[offerKeys[i]];
            uint256 toLender = adv.lenderOwed;
            uint256 share = adv.reserveOwed;
            adv.lenderOwed = 0;
            adv.reserveOwed = 0;
            toLenders += toLender;
            toReserve += share;
            if (toLender > 0) _pay(asset, adv.lender, toLender);
            emit AdvanceSettled(offerKeys[i], jobKey, adv.lender, toLender, share);
        }
        uint256 toBorrower = held - owed;
        job.escrow = 0;
        job.collateral = 0;
        job.outstanding = 0;
        // Every advance neither repaid nor liquidated owed something, so it was paid just now.
        job.unresolved = 0;
        job.status = JobStatus.Settled;
        reserveOf[asset] += toReserve;
        if (toBorrower > 0) _pay(asset, job.borrower, toBorrower);
        emit JobSettled(jobKey, job.borrower, toLenders, toReserve, toBorrower);
    }

    /// @notice The operator fails an open job. It earned nothing: its whole escrow goes back to the client at once. Its
    /// collateral stays for the recovery of its unresolved advances; with none left, the job closes at once.
    function failJob(bytes32 jobKey) external nonReentrant onlyOperator {
        Job storage job = _openJob(jobKey);
        uint256 refund = job.escrow;
        job.escrow = 0;
        job.status = JobStatus.Failed;
        emit JobFailed(jobKey, job.client, refund);
        if (refund > 0) _pay(job.asset, job.client, refund);
        if (job.unresolved == 0) _close(jobKey, job);
    }

    /// @notice The job's client or its borrower ends a job nobody ended: only while the job is open, only while none of
    /// its advances owes anything (`outstanding` 0: never advanced on, or every advance repaid or fully covered, so
    /// neither escrow nor collateral backs a lender), and only from fundedAt + reclaimDelay on. The escrow goes back to
    /// the client and the collateral to the borrower, whoever calls it. So neither party's tokens wait on the operator
    /// alone, nor on the other party, once nobody is owed: a client that went silent kept its borrower's collateral
    /// here for good (an outsider's finding). A paySupplier mined first refuses this until that advance is paid off; a
    /// reclaim mined first makes every paySupplier on the job revert (it is no longer open).
    function reclaimJob(bytes32 jobKey) external nonReentrant {
        Job storage job = _openJob(jobKey);
        if (msg.sender != job.client && msg.sender != job.borrower) revert NotClient(msg.sender);
        if (job.outstanding > 0) revert AdvancesOwed(jobKey, job.outstanding);
        uint256 reclaimableAt = job.fundedAt + reclaimDelay;
        if (block.timestamp < reclaimableAt) revert ReclaimTooEarly(reclaimableAt, block.timestamp);
        uint256 refund = job.escrow;
        uint256 released = job.collateral;
        job.escrow = 0;
        job.collateral = 0;
        job.status = JobStatus.Reclaimed;
        emit JobReclaimed(jobKey, job.client, refund, released);
        _pay(job.asset, job.client, refund);
        if (released > 0) _pay(job.asset, job.borrower, released);
    }

    /// @notice The operator recovers a defaulted advance (its job failed, or it is past due), once. In the spec's
    /// order: the job's collateral (tokens: lender's part, then the reserve's share), the backing (off chain, bounded
    /// by the service; it reduces the lender's claim), the insurance reserve (tokens to the lender; the reserve takes
    /// over that claim on the borrower), and the shortfall that nobody covered, which the borrower still owes.
    function liquidate(bytes32 offerKey, uint256 backingCovered) external nonReentrant onlyOperator {
        Advance storage adv = _owingAdvance(offerKey);
        if (adv.liquidated) revert AlreadyLiquidated(offerKey);
        bytes32 jobKey = adv.jobKey;
        bool jobFailed = jobKey != bytes32(0) && _jobs[jobKey].status == JobStatus.Failed;
        if (!jobFailed && block.timestamp <= adv.dueAt) revert NotDefaulted(offerKey, adv.dueAt, block.timestamp);

        uint256 lenderOwed = adv.lenderOwed;
        uint256 reserveOwed = adv.reserveOwed;
        uint256 owedBefore = lenderOwed + reserveOwed;
        // Step 1, the revenue of the source, is always 0 here: a failed job's escrow went back to its client, and an
        // open job's escrow waits for its completion, whose settlement pays this advance first.
        // Step 2: collateral.
        uint256 collateralToLender;
        uint256 collateralToReserve;
        if (jobKey != bytes32(0)) {
            Job storage job = _jobs[jobKey];
            uint256 fromCollateral = _min(job.collateral, owedBefore);
            collateralToLender = _min(fromCollateral, lenderOwed);
            collateralToReserve = fromCollateral - collateralToLender;
            job.collateral -= fromCollateral;
            lenderOwed -= collateralToLender;
            reserveOwed -= collateralToReserve;
        }
        // Step 3: backing, off chain.
        uint256 fromBacking = _min(backingCovered, lenderOwed);
        lenderOwed -= fromBacking;
        // Step 4: the insurance reserve, subrogated.
        uint256 fromReserve = _min(reserveOf[adv.asset], lenderOwed);
        lenderOwed -= fromReserve;
        reserveOwed += fromReserve;
        reserveOf[adv.asset] -= fromReserve;
        // Step 5: what nobody covered. The reserve's subrogated claim is not a shortfall: the reserve paid it.
        uint256 shortfall = owedBefore - collateralToLender - collateralToReserve - fromBacking - fromReserve;

        adv.lenderOwed = lenderOwed;
        adv.reserveOwed = reserveOwed;
        adv.liquidated = true;
        reserveOf[adv.asset] += collateralToReserve;
        address lender = adv.lender;
        address asset = adv.asset;
        if (jobKey != bytes32(0)) {
            Job storage job = _jobs[jobKey];
            // Fully covered from collateral (and backing): nothing is owed, so settleJob must not expect it.
            if (lenderOwed == 0 && reserveOwed == 0) job.outstanding -= 1;
            job.unresolved -= 1;
        }
        emit Liquidated(offerKey, jobKey, lender, collateralToLender + collateralToReserve, fromBacking, fromReserve, shortfall);
        if (collateralToLender + fromReserve > 0) _pay(asset, lender, collateralToLender + fromReserve);
        if (jobKey != bytes32(0)) _closeIfResolved(jobKey);
    }

    // ------------------------------------------------------------------------------------------ held payments

    /// @notice Anyone sends `account` what the contract holds for it in `asset` (heldFor), all of it, to `account` only
    /// (never elsewhere: a blacklisted address must not use the contract to move its tokens). Reverts, changing
    /// nothing, while the token still refuses it.
    function claimHeld(address asset, address account) external nonReentrant {
        uint256 amount = heldFor[asset][account];
        if (amount == 0) revert NothingHeld(asset, account);
        heldFor[asset][account] = 0;
        heldOf[asset] -= amount;
        emit HeldPaymentClaimed(asset, account, msg.sender, amount);
        IERC20(asset).safeTransfer(account, amount);
    }

    // ------------------------------------------------------------------------------------------ views

    /// @notice A job as the contract holds it (status None when unknown).
    function getJob(bytes32 jobKey) external view returns (Job memory) {
        return _jobs[jobKey];
    }

    /// @notice An advance as the contract holds it (exists false when unknown).
    function getAdvance(bytes32 offerKey) external view returns (Advance memory) {
        return _advances[offerKey];
    }

    /// @notice The EIP-712 digest the lease signer signs for `a` (what the service computes off chain).
    function leaseAuthorizationDigest(LeaseAuthorization calldata a) external view returns (bytes32) {
        return _hashTypedDataV4(_leaseStructHash(a));
    }

    // ------------------------------------------------------------------------------------------ internals

    function _leaseStructHash(LeaseAuthorization calldata a) private pure returns (bytes32) {
        return keccak256(
            abi.encode(
                LEASE_AUTHORIZATION_TYPEHASH,
                a.offerKey,
                a.jobKey,
                a.payer,
                a.supplier,
                a.asset,
                a.amount,
                a.fee,
                a.reserveShare,
                a.deadline,
                a.dueAt
            )
        );
    }

    function _checkLeaseSignature(LeaseAuthorization calldata a, bytes calldata signature) private view {
        (address recovered, ECDSA.RecoverError error,) =
            ECDSA.tryRecoverCalldata(_hashTypedDataV4(_leaseStructHash(a)), signature);
        // OpenZeppelin refuses a high s and a wrong length: one signature per authorization, no malleated twin.
        if (error != ECDSA.RecoverError.NoError) revert MalformedLeaseSignature();
        if (recovered != leaseSigner) revert WrongLeaseSigner(recovered);
    }

    function _openJob(bytes32 jobKey) private view returns (Job storage job) {
        job = _jobs[jobKey];
        if (job.status == JobStatus.None) revert UnknownJob(jobKey);
        if (job.status != JobStatus.Open) revert JobNotOpen(jobKey, job.status);
    }

    function _owingAdvance(bytes32 offerKey) private view returns (Advance storage adv) {
        adv = _advances[offerKey];
        if (!adv.exists) revert UnknownAdvance(offerKey);
        if (adv.lenderOwed == 0 && adv.reserveOwed == 0) revert NothingOwed(offerKey);
    }

    /// A repayment paid the advance off: it leaves its job's outstanding set and, unless liquidated, its unresolved set.
    function _resolveRepaid(Advance storage adv) private {
        bytes32 jobKey = adv.jobKey;
        if (jobKey == bytes32(0)) return;
        Job storage job = _jobs[jobKey];
        job.outstanding -= 1;
        if (!adv.liquidated) {
            job.unresolved -= 1;
            _closeIfResolved(jobKey);
        }
    }

    function _closeIfResolved(bytes32 jobKey) private {
        Job storage job = _jobs[jobKey];
        if (job.status == JobStatus.Failed && job.unresolved == 0) _close(jobKey, job);
    }

    /// A failed job with nothing left to recover gives the rest of its collateral back to its borrower.
    function _close(bytes32 jobKey, Job storage job) private {
        uint256 released = job.collateral;
        job.collateral = 0;
        job.status = JobStatus.Closed;
        emit JobClosed(jobKey, job.borrower, released);
        if (released > 0) _pay(job.asset, job.borrower, released);
    }

    /// Pays `amount` of `asset` from this contract to `to`; a transfer the token refuses (reverts or returns false) is
    /// held for `to` instead, so that the call goes on for everyone else.
    function _pay(address asset, address to, uint256 amount) private {
        if (!IERC20(asset).trySafeTransfer(to, amount)) _hold(asset, to, amount);
    }

    function _hold(address asset, address to, uint256 amount) private {
        heldFor[asset][to] += amount;
        heldOf[asset] += amount;
        emit PaymentHeld(asset, to, amount);
    }

    function _min(uint256 a, uint256 b) private pure returns (uint256) {
        return a < b ? a : b;
    }
}
