// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ERC3009} from "@openzeppelin/contracts/token/ERC20/extensions/draft-ERC3009.sol";

/// @title TestStablecoin
/// @notice A 6-decimal EIP-3009 stablecoin for the devnet, shaped like USDC for the x402 exact EVM scheme:
/// random bytes32 nonces, the (v, r, s) and the `bytes signature` (ERC-1271 smart wallets) overloads,
/// `name()` and `version()` equal to the EIP-712 domain. Only the minter can mint. USDC's blacklist as FiatToken has it:
/// the minter (the token's owner here) blacklists and unblacklists; a transfer, mint or burn to or from a blacklisted
/// address, or sent by one, reverts with FiatToken's message.
contract TestStablecoin is ERC3009 {
    address public immutable minter;
    string private _eip712Version;
    mapping(address account => bool) private _blacklisted;

    event Blacklisted(address indexed account);
    event UnBlacklisted(address indexed account);

    error NotMinter(address caller);

    constructor(string memory name_, string memory symbol_, string memory version_, address minter_)
        ERC20(name_, symbol_)
        EIP712(name_, version_)
    {
        minter = minter_;
        _eip712Version = version_;
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice The EIP-712 domain version, read by x402 clients.
    function version() external view returns (string memory) {
        return _eip712Version;
    }

    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    function mint(address to, uint256 amount) external {
        if (msg.sender != minter) revert NotMinter(msg.sender);
        _mint(to, amount);
    }

    function isBlacklisted(address account) external view returns (bool) {
        return _blacklisted[account];
    }

    function blacklist(address account) external {
        if (msg.sender != minter) revert NotMinter(msg.sender);
        _blacklisted[account] = true;
        emit Blacklisted(account);
    }

    function unBlacklist(address account) external {
        if (msg.sender != minter) revert NotMinter(msg.sender);
        _blacklisted[account] = false;
        emit UnBlacklisted(account);
    }

    function _update(address from, address to, uint256 value) internal override {
        require(!_blacklisted[from] && !_blacklisted[to] && !_blacklisted[msg.sender], "Blacklistable: account is blacklisted");
        super._update(from, to, value);
    }

    /// @notice Same as the (v, r, s) form, with a signature checked by ECDSA or ERC-1271.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        bytes32 hash = _hashTypedDataV4(
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        require(SignatureChecker.isValidSignatureNow(from, hash, signature), ERC3009InvalidSignature());
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce);
    }

    /// @notice Same as the (v, r, s) form, with a signature checked by ECDSA or ERC-1271.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        bytes32 hash = _hashTypedDataV4(
            keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        require(SignatureChecker.isValidSignatureNow(from, hash, signature), ERC3009InvalidSignature());
        require(to == _msgSender(), ERC20InvalidReceiver(to));
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce);
    }

    /// @notice Same as the (v, r, s) form, with a signature checked by ECDSA or ERC-1271.
    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) external {
        bytes32 hash = _hashTypedDataV4(keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)));
        require(SignatureChecker.isValidSignatureNow(authorizer, hash, signature), ERC3009InvalidSignature());
        _cancelAuthorization(authorizer, nonce);
    }
}
